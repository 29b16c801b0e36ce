#pragma once
// What the CUDA benchmarks share: random device tensors, timing with device events (eager and as a replayed
// graph), the device copy bandwidth that bounds decode, and a least-squares line of time against bytes.
#include <cstdint>
#include <functional>

#include "cuda/cuda_backend.hpp"
#include "ops/ops.hpp"

namespace plumb::bench {

// Random device values by a counter hash (cuda_fill.cu): words, or bf16 uniform in [low, high).
cudaError_t fill_u32(void* words, size_t count, uint32_t seed, cudaStream_t stream);
cudaError_t fill_bf16(void* values, size_t count, uint32_t seed, float low, float high, cudaStream_t stream);

// Exits with the status's message where it failed.
void require(const Status& status);

// A tensor of random values: bf16 uniform in [low, high), other dtypes random words.
ops::DeviceTensor tensor(cuda::CudaBackend& backend, DType dtype, Shape shape, uint32_t seed, float low = -1,
                         float high = 1);

// The median of `repeats` timed runs after two untimed ones, in milliseconds.
double median_ms(cuda::CudaBackend& backend, const std::function<void()>& run, int repeats = 9);

// The same work captured once as a CUDA graph and replayed: what decode costs without per-launch gaps.
double graph_ms(cuda::CudaBackend& backend, const std::function<void()>& run, int repeats = 9);

// Bytes read plus written a second by a device-to-device copy of 2 GiB.
double copy_bandwidth(cuda::CudaBackend& backend);

// The least-squares line of us (y) against MB (x): a fixed cost and the rate of the rest.
struct LineFit {
  double n = 0, x = 0, y = 0, xx = 0, xy = 0;

  void add(double megabytes, double us) {
    n += 1, x += megabytes, y += us, xx += megabytes * megabytes, xy += megabytes * us;
  }
  double us_per_mb() const { return (n * xy - x * y) / (n * xx - x * x); }
  double fixed_us() const { return (y - us_per_mb() * x) / n; }
  double bytes_per_second() const { return 1e12 / us_per_mb(); }
};

}  // namespace plumb::bench
