// rms_norm: bf16((x * (1 / sqrt(mean(x^2) + eps))) * w) in fp32; norm_rope: n = bf16(rms_norm(x)),
// out = bf16(bf16(n * c) + bf16(rotate_half(n) * s)) with c, s = bf16(cos/sin(f32(p) * inv_freq)).
// The sum of squares uses the CPU backend's order (element k to lane k % 16, lanes sequential, then a tree of
// 8, 4, 2, 1) and --fmad=false, so the norm and its bf16 rounding points match it bit for bit.
#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

constexpr int kLanes = 16;
constexpr int kThreads = 256;
constexpr int kVectorsPerBlock = kThreads / kLanes;
constexpr int kMaxRopePairs = 512;
constexpr int64_t kWideDim = 1024;  // vectors at least this long get a block each (rms_norm_wide_kernel)
constexpr int kWideThreads = 512;   // 3840 / 8 = 480 packed loads: one per thread

struct RopeParams {
  RmsNormArgs norm;
  const int32_t* positions;
  float inv_freq[kMaxRopePairs];
};

// 1 / sqrt(mean(x^2) + eps) over one vector, computed by the 16 lanes of a half-warp; every lane gets it.
__device__ float inverse_rms(const uint16_t* x, int64_t dim, float eps, bool active) {
  const int lane = threadIdx.x % kLanes;
  float sum = 0.0f;
  if (active) {
    for (int64_t k = lane; k < dim; k += kLanes) {
      const float value = bf16_value(x[k]);
      sum = sum + value * value;
    }
  }
  for (int width = kLanes / 2; width >= 1; width /= 2)
    sum = sum + __shfl_down_sync(0xffffffffu, sum, width, kLanes);
  const float total = __shfl_sync(0xffffffffu, sum, 0, kLanes);
  const float mean = total / static_cast<float>(dim);
  return 1.0f / sqrtf(mean + eps);
}

__device__ __forceinline__ float normed(const uint16_t* x, const uint16_t* weight, int64_t k, float inverse) {
  const float value = bf16_value(x[k]) * inverse;
  return weight != nullptr ? value * bf16_value(weight[k]) : value;
}

__global__ void rms_norm_kernel(RmsNormArgs launch) {
  wait_for_previous_kernel();
  const int64_t vector = static_cast<int64_t>(blockIdx.x) * kVectorsPerBlock + threadIdx.x / kLanes;
  const bool active = vector < launch.rows * launch.heads;
  const int64_t r = vector / launch.heads, h = vector % launch.heads;
  const uint16_t* x = launch.x + r * launch.x_stride + h * launch.dim;
  const float inverse = inverse_rms(x, launch.dim, launch.eps, active);
  if (!active) return;
  uint16_t* out = launch.out + r * launch.out_stride + h * launch.dim;
  for (int64_t k = threadIdx.x % kLanes; k < launch.dim; k += kLanes)
    out[k] = bf16_bits(normed(x, launch.weight, k, inverse));
}

// Copies n bf16 values (n % 8 == 0, both ends 16-byte aligned) into shared memory as floats, 8 a load, so
// each thread's loads are in flight together instead of one round trip to memory per element.
__device__ __forceinline__ void stage_bf16x8(const uint16_t* source, float* target, int64_t n) {
  for (int64_t c = threadIdx.x; c < n / 8; c += blockDim.x) {
    const uint4 packed = reinterpret_cast<const uint4*>(source)[c];
    const uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      target[8 * c + 2 * j] = bf16_value(static_cast<uint16_t>(words[j] & 0xffffu));
      target[8 * c + 2 * j + 1] = bf16_value(static_cast<uint16_t>(words[j] >> 16));
    }
  }
}

__device__ __forceinline__ bool aligned16(const void* pointer) {
  return (reinterpret_cast<uintptr_t>(pointer) & 15u) == 0;
}

// One block per vector for long vectors (hidden rows): the block stages x (and the weight) in shared memory
// so the 16 lanes' sequential sums and the writes read them at shared-memory latency. Same sums, same order.
__global__ void rms_norm_wide_kernel(RmsNormArgs launch) {
  wait_for_previous_kernel();
  extern __shared__ float values[];  // x, then the weight
  __shared__ float inverse;
  const int64_t vector = blockIdx.x;
  const int64_t r = vector / launch.heads, h = vector % launch.heads;
  const uint16_t* x = launch.x + r * launch.x_stride + h * launch.dim;
  float* weights = values + launch.dim;
  const bool packed =
      launch.dim % 8 == 0 && aligned16(x) && (launch.weight == nullptr || aligned16(launch.weight));
  if (packed) {
    stage_bf16x8(x, values, launch.dim);
    if (launch.weight != nullptr) stage_bf16x8(launch.weight, weights, launch.dim);
  } else {
    for (int64_t k = threadIdx.x; k < launch.dim; k += blockDim.x) {
      values[k] = bf16_value(x[k]);
      if (launch.weight != nullptr) weights[k] = bf16_value(launch.weight[k]);
    }
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    float sum = 0.0f;
    if (threadIdx.x < kLanes) {
#pragma unroll 8
      for (int64_t k = threadIdx.x; k < launch.dim; k += kLanes) sum = sum + values[k] * values[k];
    }
    for (int width = kLanes / 2; width >= 1; width /= 2)
      sum = sum + __shfl_down_sync(0xffffffffu, sum, width, kLanes);
    if (threadIdx.x == 0) inverse = 1.0f / sqrtf(sum / static_cast<float>(launch.dim) + launch.eps);
  }
  __syncthreads();
  uint16_t* out = launch.out + r * launch.out_stride + h * launch.dim;
  for (int64_t k = threadIdx.x; k < launch.dim; k += blockDim.x) {
    const float value = values[k] * inverse;
    out[k] = bf16_bits(launch.weight != nullptr ? value * weights[k] : value);
  }
}

__global__ void norm_rope_kernel(RopeParams params) {
  wait_for_previous_kernel();
  const RmsNormArgs& norm = params.norm;
  const int64_t vector = static_cast<int64_t>(blockIdx.x) * kVectorsPerBlock + threadIdx.x / kLanes;
  const bool active = vector < norm.rows * norm.heads;
  const int64_t r = vector / norm.heads, h = vector % norm.heads;
  const uint16_t* x = norm.x + r * norm.x_stride + h * norm.dim;
  const float inverse = inverse_rms(x, norm.dim, norm.eps, active);
  if (!active) return;
  uint16_t* out = norm.out + r * norm.out_stride + h * norm.dim;
  const int64_t half = norm.dim / 2;
  const float position = static_cast<float>(params.positions[r]);
  for (int64_t i = threadIdx.x % kLanes; i < half; i += kLanes) {
    const float first = round_bf16(normed(x, norm.weight, i, inverse));
    const float second = round_bf16(normed(x, norm.weight, i + half, inverse));
    const float theta = position * params.inv_freq[i];
    const float cosine = round_bf16(cosf(theta));
    const float sine = round_bf16(sinf(theta));
    out[i] = bf16_bits(round_bf16(first * cosine) + round_bf16(-second * sine));
    out[i + half] = bf16_bits(round_bf16(second * cosine) + round_bf16(first * sine));
  }
}

}  // namespace

cudaError_t launch_rms_norm(const RmsNormArgs& launch, cudaStream_t stream) {
  const int64_t vectors = launch.rows * launch.heads;
  if (vectors == 0) return cudaSuccess;
  const size_t wide_shared = 2 * static_cast<size_t>(launch.dim) * sizeof(float);  // x and the weight
  if (launch.dim >= kWideDim && wide_shared <= 48 * 1024) {
    launch_dependent(rms_norm_wide_kernel, static_cast<unsigned>(vectors), kWideThreads, wide_shared, stream,
                     launch);
    return cudaGetLastError();
  }
  launch_dependent(rms_norm_kernel, blocks_for(vectors, kVectorsPerBlock), kThreads, 0, stream, launch);
  return cudaGetLastError();
}

cudaError_t launch_norm_rope(const NormRopeArgs& launch, cudaStream_t stream) {
  const int64_t vectors = launch.norm.rows * launch.norm.heads;
  if (launch.norm.dim / 2 > kMaxRopePairs) return cudaErrorInvalidValue;
  if (vectors == 0) return cudaSuccess;
  RopeParams params{};
  params.norm = launch.norm;
  params.positions = launch.positions;
  for (int64_t i = 0; i < launch.norm.dim / 2; ++i) params.inv_freq[i] = launch.inv_freq[i];
  launch_dependent(norm_rope_kernel, blocks_for(vectors, kVectorsPerBlock), kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace plumb::cuda
