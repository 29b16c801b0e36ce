#pragma once
// Which launches are dependent ones (dependent_launch.cuh) and which queue in plain stream order. A plain
// header: the CUDA sources include it through dependent_launch.cuh, the backend and its tests directly.
#include <cstdint>

namespace plumb::cuda {

// Calls of more rows than this queue their kernels in plain stream order instead of as dependent launches:
// measured on an H100 (bf16 12B prompts), overlapping a prompt's launches cost 3.1% of a 2048-token forward
// and 6.4% of an 8192-token one (4.0% to 5.0% at 256, 512, 1024 and 2048 tokens with the ring's pairs), while
// decode steps (up to 32 streams, and drafted rows) gain from it.
inline constexpr int64_t kDependentLaunchRows = 128;

// Whether this thread's next launch is a dependent one (dependent_launch.cuh): compute capability 9.0 or
// later, not switched off (PLUMB_CUDA_DEPENDENT_LAUNCH=0), and outside a plain PlainLaunchScope.
bool dependent_launch_on();

// While one is alive on a thread with `plain` true, that thread's launches are in plain stream order.
class PlainLaunchScope {
 public:
  explicit PlainLaunchScope(bool plain);
  PlainLaunchScope(const PlainLaunchScope&) = delete;
  PlainLaunchScope& operator=(const PlainLaunchScope&) = delete;
  ~PlainLaunchScope();

 private:
  bool before_;
};

}  // namespace plumb::cuda
