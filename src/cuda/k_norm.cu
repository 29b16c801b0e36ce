// rms_norm: bf16((x * (1 / sqrt(mean(x^2) + eps))) * w) in fp32; norm_rope: n = bf16(rms_norm(x)),
// out = bf16(bf16(n * c) + bf16(rotate_half(n) * s)) with c, s = bf16(cos/sin(f32(p) * inv_freq)).
// The sum of squares uses the CPU backend's order (element k to lane k % 16, lanes sequential, then a tree of
// 8, 4, 2, 1: norm_order.cuh) and --fmad=false, so the norm and its bf16 rounding points match it bit for
// bit.

#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/head_norms_params.cuh"
#include "cuda/launchers.hpp"
#include "cuda/norm_order.cuh"

namespace plumb::cuda {

// k_residual_norm.cu: residual_norm a warp a row (the same bits), for rows whose vectors allow 16-byte loads.
bool residual_norm_rows_fit(const ResidualNormArgs& launch);
cudaError_t launch_residual_norm_rows(const ResidualNormArgs& launch, cudaStream_t stream);

namespace {

constexpr int kLanes = kNormLanes;
constexpr int kThreads = 256;
constexpr int kVectorsPerBlock = kThreads / kLanes;
constexpr int64_t kWideDim = 1024;    // vectors at least this long get a block each (rms_norm_wide_kernel)
constexpr int kWideThreads = 512;     // 3840 / 8 = 480 packed loads: one per thread
constexpr int kMaxFusedColumns = 24;  // residual_norm's columns a thread: 12288-wide rows, 48 KiB staged
// From this many rows residual_norm takes a warp a row. Below it a block a row: at decode the warp kernel's
// batches made a 12B step 1.1 ms slower (1 stream), where prompts gained 2.7% at 2048 tokens (H200).
constexpr int64_t kWarpNormRows = 64;

struct RopeParams {
  RmsNormArgs norm;
  const int32_t* positions;
  float inv_freq[kMaxRopePairs];
};

constexpr int kLoadBatch = 8;  // a lane's loads in flight together in the half-warp kernels

// 1 / sqrt(mean(x^2) + eps) over one vector, computed by the 16 lanes of a half-warp; every lane gets it.
// Each lane loads kLoadBatch of its elements at once and then adds them in order, so it waits on memory
// once a batch rather than once an element.
__device__ float inverse_rms(const uint16_t* x, int64_t dim, float eps, bool active) {
  const int lane = threadIdx.x % kLanes;
  float sum = 0.0f;
  if (active) {
    for (int64_t k0 = lane; k0 < dim; k0 += kLanes * kLoadBatch) {
      float values[kLoadBatch];
#pragma unroll
      for (int b = 0; b < kLoadBatch; ++b)
        values[b] = k0 + b * kLanes < dim ? bf16_value(x[k0 + b * kLanes]) : 0.0f;
#pragma unroll
      for (int b = 0; b < kLoadBatch; ++b)
        if (k0 + b * kLanes < dim) sum = sum + values[b] * values[b];
    }
  }
  const float total = __shfl_sync(0xffffffffu, lane_group_total(sum), 0, kLanes);
  return inverse_of_total(total, dim, eps);
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

// One block per vector for long vectors (hidden rows): the block stages x (and the weight) in shared memory
// so the 16 lanes' sequential sums and the writes read them at shared-memory latency. Same sums, same order.
__global__ void rms_norm_wide_kernel(RmsNormArgs launch) {
  wait_for_previous_kernel();
  extern __shared__ __align__(16) float staged[];  // x, then the weight
  const int64_t vector = blockIdx.x;
  const int64_t r = vector / launch.heads, h = vector % launch.heads;
  const uint16_t* x = launch.x + r * launch.x_stride + h * launch.dim;
  const LaneMajorRow values(staged, launch.dim);
  float* weights = staged + lane_major_bytes(launch.dim) / sizeof(float);
  stage_vector(x, values, launch.dim);
  if (launch.weight != nullptr) stage_vector(launch.weight, weights, launch.dim);
  const float inverse = block_inverse_rms(values, launch.dim, launch.eps);
  uint16_t* out = launch.out + r * launch.out_stride + h * launch.dim;
  for (int64_t k = threadIdx.x; k < launch.dim; k += blockDim.x) {
    const float value = values[k] * inverse;
    out[k] = bf16_bits(launch.weight != nullptr ? value * weights[k] : value);
  }
}

// residual_norm, one block a row: h_out = bf16(h + bf16(o * inv_o * w_post)), bf16(h_out * factor) when
// scaled, then next = bf16(h_out * inv_h * w_next); the staged row holds o, then h_out as rounded. Each
// thread keeps its kPerThread columns' weights (read before the wait: no launch writes them) and h in
// registers, so the row costs one memory round trip before the sums.
template <int kPerThread>
__global__ void __launch_bounds__(kWideThreads) residual_norm_kernel(ResidualNormArgs launch) {
  const RmsNormArgs& post = launch.post;
  const RmsNormArgs& next = launch.next_norm;
  const auto dim = static_cast<int>(post.dim);
  float post_weight[kPerThread], next_weight[kPerThread], h[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int k = static_cast<int>(threadIdx.x) + i * kWideThreads;
    post_weight[i] = k < dim ? bf16_value(post.weight[k]) : 0.0f;
    next_weight[i] = k < dim ? bf16_value(next.weight[k]) : 0.0f;
  }
  wait_for_previous_kernel();
  extern __shared__ __align__(16) float staged[];
  const LaneMajorRow values(staged, dim);
  const int64_t r = blockIdx.x;
  const uint16_t* h_row = launch.h + r * launch.h_stride;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int k = static_cast<int>(threadIdx.x) + i * kWideThreads;
    h[i] = k < dim ? bf16_value(h_row[k]) : 0.0f;
  }
  stage_vector(post.x + r * post.x_stride, values, dim);
  const float post_inverse = block_inverse_rms(values, dim, post.eps);
  uint16_t* h_out = launch.h_out + r * launch.h_out_stride;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int k = static_cast<int>(threadIdx.x) + i * kWideThreads;
    if (k >= dim) break;
    const float sum =
        residual_element(values[k], post_inverse, post_weight[i], h[i], launch.scaled, launch.factor);
    values[k] = sum;
    h_out[k] = bf16_bits(sum);
    h[i] = sum;  // this thread's own h_out, for the next norm's products
  }
  const float next_inverse = block_inverse_rms(values, dim, next.eps);
  uint16_t* out = next.out + r * next.out_stride;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int k = static_cast<int>(threadIdx.x) + i * kWideThreads;
    if (k >= dim) break;
    out[k] = bf16_bits(h[i] * next_inverse * next_weight[i]);
  }
}

// residual_norm_kernel's steps and bits with each thread on 8 adjacent columns: 16-byte loads and stores of
// o, h, the weights, h_out and next, and one lane-major slot column (element 8t + j is lane 8 (t % 2) + j's
// term t / 2), for rows of up to 8 x kWideThreads columns, a multiple of 8, 16-byte aligned. A 3840-wide
// row in a graph's chain of launches: 4.50 us against the strided kernel's 5.37 (H100).
__global__ void __launch_bounds__(kWideThreads) residual_norm_vector_kernel(ResidualNormArgs launch) {
  const RmsNormArgs& post = launch.post;
  const RmsNormArgs& next = launch.next_norm;
  const auto dim = static_cast<int>(post.dim);
  const int t = static_cast<int>(threadIdx.x);
  const bool active = 8 * t < dim;
  float post_weight[8], next_weight[8], o[8], h[8];
  if (active) {
    unpack_bf16x8(reinterpret_cast<const uint4*>(post.weight)[t], post_weight);
    unpack_bf16x8(reinterpret_cast<const uint4*>(next.weight)[t], next_weight);
  }
  wait_for_previous_kernel();
  extern __shared__ __align__(16) float staged[];
  const LaneMajorRow values(staged, dim);
  float* slots = staged + 8 * (t % 2) * values.stride + t / 2;  // element 8t + j at slots[j * stride]
  const int64_t r = blockIdx.x;
  if (active) {
    unpack_bf16x8(reinterpret_cast<const uint4*>(post.x + r * post.x_stride)[t], o);
    unpack_bf16x8(reinterpret_cast<const uint4*>(launch.h + r * launch.h_stride)[t], h);
#pragma unroll
    for (int j = 0; j < 8; ++j) slots[j * values.stride] = o[j];
  }
  const float post_inverse = block_inverse_rms(values, dim, post.eps);
  if (active) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      h[j] = residual_element(o[j], post_inverse, post_weight[j], h[j], launch.scaled, launch.factor);
      slots[j * values.stride] = h[j];
    }
    reinterpret_cast<uint4*>(launch.h_out + r * launch.h_out_stride)[t] = pack_bf16x8(h);
  }
  const float next_inverse = block_inverse_rms(values, dim, next.eps);
  if (!active) return;
  float out[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = h[j] * next_inverse * next_weight[j];
  reinterpret_cast<uint4*>(next.out + r * next.out_stride)[t] = pack_bf16x8(out);
}

// The half-warp's rotation of its normed vector x: out[i] and out[i + dim/2] from x's pair i (each lane
// reads only the elements it writes, so out may be x), and the same bits into `copy` where it is not null.
// A lane reads kLoadBatch pairs (and their weights) before it writes them, so its loads are in flight
// together.
__device__ __forceinline__ void rotate(const uint16_t* x, const uint16_t* weight, float inverse, int64_t dim,
                                       float position, const float* inv_freq, uint16_t* out,
                                       uint16_t* copy = nullptr) {
  const int64_t half = dim / 2;
  for (int64_t i0 = threadIdx.x % kLanes; i0 < half; i0 += kLanes * kLoadBatch) {
    float firsts[kLoadBatch], seconds[kLoadBatch];
#pragma unroll
    for (int b = 0; b < kLoadBatch; ++b) {
      const int64_t i = i0 + b * kLanes;
      if (i >= half) break;
      firsts[b] = round_bf16(normed(x, weight, i, inverse));
      seconds[b] = round_bf16(normed(x, weight, i + half, inverse));
    }
#pragma unroll
    for (int b = 0; b < kLoadBatch; ++b) {
      const int64_t i = i0 + b * kLanes;
      if (i >= half) break;
      rotate_pair(firsts[b], seconds[b], position * inv_freq[i], i, half, out, copy);
    }
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
  rotate(x, norm.weight, inverse, norm.dim, static_cast<float>(params.positions[r]), params.inv_freq,
         norm.out + r * norm.out_stride + h * norm.dim);
}

// head_norms for any head_dim, a half-warp a vector (head_norms_vector's numbering): each kv vector writes
// its value vector (rms_norm_kernel's steps) before its key's rotation (norm_rope_kernel's), so a value read
// from the raw keys is read before they change; with caches, a kv vector also writes its bits to its cache
// slot.
__global__ void head_norms_kernel(HeadNormsParams params) {
  wait_for_previous_kernel();
  const int64_t dim = params.q.dim;
  int64_t r, h;
  bool active, is_q;
  const RmsNormArgs& norm = head_norms_vector(
      params, static_cast<int64_t>(blockIdx.x) * kVectorsPerBlock + threadIdx.x / kLanes, r, h, active, is_q);
  const RmsNormArgs& v = params.v;
  const uint16_t* v_x = v.x + r * v.x_stride + h * dim;
  const float v_inverse = inverse_rms(v_x, dim, v.eps, active && !is_q);
  uint16_t *cache_keys = nullptr, *cache_values = nullptr;
  if (active && !is_q) {
    cache_at(params, r, h, dim, cache_keys, cache_values);
    uint16_t* v_out = v.out + r * v.out_stride + h * dim;
    for (int64_t k = threadIdx.x % kLanes; k < dim; k += kLanes) {
      const uint16_t bits = bf16_bits(normed(v_x, nullptr, k, v_inverse));
      v_out[k] = bits;
      if (cache_values != nullptr) cache_values[k] = bits;
    }
  }
  __syncwarp();  // every lane's value reads before any key is rotated in place
  const uint16_t* x = norm.x + r * norm.x_stride + h * dim;
  const float inverse = inverse_rms(x, dim, norm.eps, active);
  if (!active) return;
  rotate(x, norm.weight, inverse, dim, static_cast<float>(params.positions[r]), params.inv_freq,
         norm.out + r * norm.out_stride + h * dim, cache_keys);
}

// residual_norm a block a row, its row staged lane-major: up to 8 or kMaxFusedColumns columns a thread.
template <int kPerThread>
cudaError_t launch_residual_norm_blocks(const ResidualNormArgs& launch, cudaStream_t stream) {
  const auto kernel = residual_norm_kernel<kPerThread>;
  const size_t shared = lane_major_bytes(launch.post.dim);
  if (shared > 48 * 1024)
    if (const cudaError_t code = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      static_cast<int>(shared));
        code != cudaSuccess)
      return code;
  launch_dependent(kernel, static_cast<unsigned>(launch.post.rows), kWideThreads, shared, stream, launch);
  return cudaGetLastError();
}

// PLUMB_CUDA_FUSED_NORM=0 runs residual_norm as its four steps' launches (for A/B in one build).
bool fused_norm_switch_on() {
  static const bool on = env_switch_on("PLUMB_CUDA_FUSED_NORM");
  return on;
}

// Rows residual_norm_vector_kernel takes; PLUMB_CUDA_NORM_VECTOR=0 sends them to residual_norm_kernel<8>.
bool residual_norm_vector_fits(const ResidualNormArgs& launch) {
  static const bool on = env_switch_on("PLUMB_CUDA_NORM_VECTOR");
  const RmsNormArgs& post = launch.post;
  const RmsNormArgs& next = launch.next_norm;
  return on && post.dim % 8 == 0 && post.dim <= 8 * kWideThreads && rows_aligned16(post.x, post.x_stride) &&
         rows_aligned16(post.weight, 0) && rows_aligned16(next.weight, 0) &&
         rows_aligned16(launch.h, launch.h_stride) && rows_aligned16(launch.h_out, launch.h_out_stride) &&
         rows_aligned16(next.out, next.out_stride);
}

}  // namespace

cudaError_t launch_rms_norm(const RmsNormArgs& launch, cudaStream_t stream) {
  const int64_t vectors = launch.rows * launch.heads;
  if (vectors == 0) return cudaSuccess;
  // x lane-major, then the weight
  const size_t wide_shared = lane_major_bytes(launch.dim) + static_cast<size_t>(launch.dim) * sizeof(float);
  if (launch.dim >= kWideDim && wide_shared <= 48 * 1024) {
    launch_dependent(rms_norm_wide_kernel, static_cast<unsigned>(vectors), kWideThreads, wide_shared, stream,
                     launch);
    return cudaGetLastError();
  }
  launch_dependent(rms_norm_kernel, blocks_for(vectors, kVectorsPerBlock), kThreads, 0, stream, launch);
  return cudaGetLastError();
}

bool residual_norm_fused(int64_t dim) {
  return fused_norm_switch_on() && dim <= kMaxFusedColumns * kWideThreads;
}

cudaError_t launch_residual_norm(const ResidualNormArgs& launch, cudaStream_t stream) {
  const RmsNormArgs& post = launch.post;
  if (!residual_norm_fused(post.dim)) return cudaErrorInvalidValue;
  if (post.rows == 0) return cudaSuccess;
  if (post.rows >= kWarpNormRows && residual_norm_rows_fit(launch))
    return launch_residual_norm_rows(launch, stream);
  if (residual_norm_vector_fits(launch)) {
    launch_dependent(residual_norm_vector_kernel, static_cast<unsigned>(post.rows), kWideThreads,
                     lane_major_bytes(post.dim), stream, launch);
    return cudaGetLastError();
  }
  return post.dim <= 8 * kWideThreads ? launch_residual_norm_blocks<8>(launch, stream)
                                      : launch_residual_norm_blocks<kMaxFusedColumns>(launch, stream);
}

HeadNormsParams head_norms_params(const HeadNormsArgs& launch, const KvWriteArgs* cache) {
  const RmsNormArgs& q = launch.q.norm;
  HeadNormsParams params{};
  params.v = launch.v;
  params.q = q;
  params.k = launch.k.norm;
  params.positions = launch.q.positions;
  for (int64_t i = 0; i < q.dim / 2; ++i) params.inv_freq[i] = launch.q.inv_freq[i];
  if (cache == nullptr) return params;
  int64_t with_rows = 0;
  for (int64_t s = 0; s < cache->segment_count; ++s) with_rows += cache->segments[s].rows > 0 ? 1 : 0;
  if (with_rows > kHeadNormsSegments) return params;
  params.cache_row = cache->kv_heads * cache->head_dim;
  for (int64_t s = 0; s < cache->segment_count; ++s)
    if (const KvWriteSegmentArgs& g = cache->segments[s]; g.rows > 0)
      params.segments[params.segment_count++] = {g.first_row, g.cache_keys, g.cache_values, g.capacity};
  return params;
}

cudaError_t launch_head_norms(const HeadNormsArgs& launch, const KvWriteArgs* cache, cudaStream_t stream) {
  const RmsNormArgs& q = launch.q.norm;
  const int64_t vectors = q.rows * (q.heads + launch.k.norm.heads);
  if (q.dim / 2 > kMaxRopePairs) return cudaErrorInvalidValue;
  if (vectors == 0) return cudaSuccess;
  const HeadNormsParams params = head_norms_params(launch, cache);
  if (head_norms_lanes_fit(q.dim, q.rows)) {
    if (const cudaError_t code = launch_head_norms_lanes(params, vectors, stream); code != cudaSuccess)
      return code;
  } else {
    launch_dependent(head_norms_kernel, blocks_for(vectors, kVectorsPerBlock), kThreads, 0, stream, params);
    if (const cudaError_t code = cudaGetLastError(); code != cudaSuccess) return code;
  }
  // More streams than the table holds: their caches take kv_write's own launch.
  if (cache != nullptr && params.segment_count == 0) return launch_kv_write(*cache, stream);
  return cudaSuccess;
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
