// Device-side random fill for the CUDA benchmarks: a counter hash per element, so gigabytes of weights take
// milliseconds instead of a host round trip.
#include <cuda_runtime.h>

#include <cstdint>

namespace plumb::bench {

namespace {

__device__ uint32_t hash(uint64_t index, uint32_t seed) {
  uint64_t x = index * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x >> 16);
}

__global__ void fill_u32_kernel(uint32_t* words, size_t count, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    words[i] = hash(i, seed);
}

// bf16 values uniform in [low, high), rounded by truncation (any bf16 value will do for timing).
__global__ void fill_bf16_kernel(uint16_t* values, size_t count, uint32_t seed, float low, float high) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    const float unit = static_cast<float>(hash(i, seed) >> 8) * (1.0f / 16777216.0f);
    values[i] = static_cast<uint16_t>(__float_as_uint(low + unit * (high - low)) >> 16);
  }
}

}  // namespace

cudaError_t fill_u32(void* words, size_t count, uint32_t seed, cudaStream_t stream) {
  fill_u32_kernel<<<1024, 256, 0, stream>>>(static_cast<uint32_t*>(words), count, seed);
  return cudaGetLastError();
}

cudaError_t fill_bf16(void* values, size_t count, uint32_t seed, float low, float high, cudaStream_t stream) {
  fill_bf16_kernel<<<1024, 256, 0, stream>>>(static_cast<uint16_t*>(values), count, seed, low, high);
  return cudaGetLastError();
}

}  // namespace plumb::bench
