#pragma once
// The CPU reference backend: every op in fp32 at HF's rounding points, multithreaded over rows and columns
// with a partition that never depends on the row count (I1-I4).
#include <memory>

#include "ops/backend.hpp"

namespace plumb::cpu {

// threads == 0: one per hardware thread.
std::unique_ptr<ops::Backend> make_cpu_backend(int threads = 0);

}  // namespace plumb::cpu
