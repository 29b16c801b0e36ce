#include "cli/bench_bounds.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "models/gemma4/try_assign.hpp"

namespace plumb::cli {

Result<double> median_seconds(ops::Backend& backend, int warmups, int repeats,
                              const std::function<Status()>& run) {
  for (int i = 0; i < warmups; ++i) PLUMB_TRY(run());
  PLUMB_TRY(backend.synchronize());
  std::vector<double> seconds;
  for (int i = 0; i < std::max(repeats, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    PLUMB_TRY(run());
    PLUMB_TRY(backend.synchronize());
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

Result<double> copy_bandwidth(ops::Backend& backend, int64_t bytes) {
  const int64_t elements = std::max<int64_t>(bytes / 2, 1);
  PLUMB_TRY_ASSIGN(from, backend.allocate(DType::bf16, {elements}));
  PLUMB_TRY_ASSIGN(to, backend.allocate(DType::bf16, {elements}));
  // Fill the source once so that the copy reads written memory (a fresh allocation may be unbacked).
  std::vector<uint16_t> pattern(static_cast<size_t>(elements));
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u >> 20));
  PLUMB_TRY(backend.upload(TensorView::contiguous(pattern.data(), DType::bf16, {elements}), from.view));
  PLUMB_TRY_ASSIGN(seconds, median_seconds(backend, 2, 9, [&] { return backend.copy(from.view, to.view); }));
  return 2.0 * static_cast<double>(from.view.bytes()) / seconds;
}

#ifndef PLUMB_HAVE_CUBLAS
Result<double> library_gemm_rate(ops::Backend& backend, int64_t size) {
  (void)size;
  return error_at("bench", "bound", "bf16 GEMM", "is not measured in this build", "a CUDA build with cuBLAS",
                  std::string(backend.name()) + " backend");
}
#endif

#ifndef PLUMB_HAVE_CUDA_BACKEND
int64_t peak_device_bytes(const ops::Backend& backend) {
  (void)backend;
  return -1;
}

std::string backend_description(const ops::Backend& backend) {
  return std::string(backend.name());
}

bool enable_op_profile(ops::Backend& backend) {
  (void)backend;
  return false;
}

std::string take_op_profile(ops::Backend& backend, int64_t steps, size_t lines) {
  (void)backend, (void)steps, (void)lines;
  return {};
}
#endif

}  // namespace plumb::cli
