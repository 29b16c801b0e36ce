// matmul_head_norms' last launch at decode rows: each of q, k and v's elements is its K-split partials added
// in split order and rounded to bf16 once (k_matmul_pipeline.cuh's split_total and reduce_column), or the
// bf16 the matmul stored; then head_norms of those rows: v_out = bf16(v * inv_v), n = bf16(x * inv * w) for q
// and k, out = (PairRotation(p * inv_freq[i]).low(n[i], n[i + half]), .high(...)), inv = 1 / sqrt(mean(x^2) +
// eps) in norm_order.cuh's order (k_head_norms.cu's steps), written in place and to the caches. One launch
// instead of the group's reduce and head_norms; a block a vector, a thread an element (two for head_dim over
// 256).
#include <algorithm>
#include <span>

#include "cuda/dependent_launch.cuh"
#include "cuda/head_norms_params.cuh"
#include "cuda/launchers.hpp"
#include "cuda/matmul_plan.hpp"
#include "cuda/norm_order.cuh"
#include "cuda/split_sums.cuh"

namespace plumb::cuda::matmul {

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 2;
constexpr int kMaxDim = kThreads * kPerThread;
// Decode rows (the tiled members' 1 to 16, the grouped tile's 17 to 32): the group's reduce launch and
// head_norms' are each a chain of dependent steps in few blocks, where one launch saves one chain. Prompt
// rows keep the two launches.
constexpr int64_t kMaxRows = 32;

// PLUMB_CUDA_HEAD_NORMS_REDUCE=0 keeps the group's reduce and head_norms as two launches (A/B in one build).
bool reduce_switch_on() {
  static const bool on = env_switch_on("PLUMB_CUDA_HEAD_NORMS_REDUCE");
  return on;
}

struct ReduceNormsParams {
  MemberSums q, k, v;  // v is k's where the values come from the raw keys
  HeadNormsParams norms;
};
static_assert(sizeof(ReduceNormsParams) <= 4096, "the kernel's parameters exceed 4 KiB");

// Element `col` of a member's row `row` as bf16 (a float holding it): reduce_column's bits, with eight
// splits' loads at once, since a reduce of few blocks waits on each round trip (12B's sliding q has 8 splits,
// k 15).
__device__ __forceinline__ float member_value(const MemberSums& m, int64_t row, int64_t col) {
  if (!m.cross) return bf16_value(m.out[row * m.out_stride + col]);
  float total[1];
  add_splits<1, 8>(
      m.splits, [&](int s, int) { return m.partial[(s * m.rows + row) * m.n + col]; }, total);
  return bf16_value(bf16_bits(total[0]));
}

// The thread's elements (threadIdx.x + kThreads i) of vector h of row r, kept and staged lane-major.
struct Elements {
  float at[kPerThread];

  __device__ __forceinline__ void load(const MemberSums& m, int64_t r, int64_t h, int dim,
                                       const LaneMajorRow& staged) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kThreads;
      at[i] = k < dim ? member_value(m, r, h * dim + k) : 0.0f;
      if (k < dim) staged[k] = at[i];
    }
  }
};

__global__ void __launch_bounds__(kThreads)
    reduce_head_norms_kernel(const __grid_constant__ ReduceNormsParams params) {
  __shared__ __align__(16) float raw_rows[2][kNormLanes * lane_major_stride(kMaxDim)];
  __shared__ float normed[kMaxDim];
  __shared__ float inv_freq[kMaxDim / 2];
  const HeadNormsParams& hn = params.norms;
  const int dim = static_cast<int>(hn.q.dim), half = dim / 2;
  int64_t r, h;
  bool active, is_q;
  const RmsNormArgs& norm = head_norms_vector(hn, blockIdx.x, r, h, active, is_q);
  if (!active) return;       // a block a vector: none past the launch's
  float weight[kPerThread];  // no launch writes the weights: read before the wait
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int k = static_cast<int>(threadIdx.x) + i * kThreads;
    weight[i] = norm.weight == nullptr ? 1.0f : k < dim ? bf16_value(norm.weight[k]) : 0.0f;
  }
  for (int i = static_cast<int>(threadIdx.x); i < half; i += kThreads) inv_freq[i] = hn.inv_freq[i];
  wait_for_previous_kernel();
  const LaneMajorRow x_row(raw_rows[0], dim), v_row(raw_rows[1], dim);
  Elements x, v;
  x.load(is_q ? params.q : params.k, r, h, dim, x_row);
  if (!is_q) v.load(params.v, r, h, dim, v_row);
  const float inverse = block_inverse_rms(x_row, dim, norm.eps);  // every thread reads them before any write
  const float v_inverse = is_q ? 0.0f : block_inverse_rms(v_row, dim, hn.v.eps);
  uint16_t *cache_keys = nullptr, *cache_values = nullptr;
  if (!is_q) {
    cache_at(hn, r, h, dim, cache_keys, cache_values);
    uint16_t* v_out = hn.v.out + r * hn.v.out_stride + h * dim;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kThreads;
      if (k >= dim) break;
      const uint16_t bits = bf16_bits(v.at[i] * v_inverse);
      v_out[k] = bits;
      if (cache_values != nullptr) cache_values[k] = bits;
    }
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int k = static_cast<int>(threadIdx.x) + i * kThreads;
    if (k < dim) normed[k] = round_bf16(x.at[i] * inverse * weight[i]);
  }
  __syncthreads();  // the normed vector (and inv_freq) are staged
  uint16_t* out = norm.out + r * norm.out_stride + h * dim;
  const auto position = static_cast<float>(hn.positions[r]);
  for (int i = static_cast<int>(threadIdx.x); i < half; i += kThreads)
    rotate_pair(normed[i], normed[i + half], position * inv_freq[i], i, half, out, cache_keys);
}

// Whether a norm's rows are member m's outputs, normed in place.
bool in_place_of(const RmsNormArgs& norm, const MatmulArgs& m) {
  return norm.x == m.out && norm.out == norm.x && norm.x_stride == m.out_stride &&
         norm.out_stride == norm.x_stride && norm.heads * norm.dim == m.weight.out && norm.rows == m.rows;
}

}  // namespace

bool head_norms_reduce_fits(std::span<const MatmulArgs> members, const HeadNormsArgs& norms) {
  const RmsNormArgs &q = norms.q.norm, &k = norms.k.norm, &v = norms.v;
  const bool values_fit =
      members.size() == 3 ? in_place_of(v, members[2]) : v.x == k.x && members.size() == 2;
  return reduce_switch_on() && q.rows <= kMaxRows && q.dim >= 2 && q.dim <= kMaxDim && q.dim % 2 == 0 &&
         std::ranges::none_of(members, [](const MatmulArgs& m) { return m.out_f32; }) &&
         in_place_of(q, members[0]) && in_place_of(k, members[1]) && values_fit;
}

cudaError_t launch_head_norms_reduce(std::span<const MemberSums> sums, const HeadNormsArgs& norms,
                                     const KvWriteArgs* cache, cudaStream_t stream) {
  const RmsNormArgs& q = norms.q.norm;
  const int64_t vectors = q.rows * (q.heads + norms.k.norm.heads);
  if (vectors == 0) return cudaSuccess;
  const ReduceNormsParams params{sums[0], sums[1], sums.size() == 3 ? sums[2] : sums[1],
                                 head_norms_params(norms, cache)};
  if (cache != nullptr && params.norms.segment_count == 0)
    return cudaErrorInvalidValue;  // rows fit the table
  launch_dependent(reduce_head_norms_kernel, static_cast<unsigned>(vectors), kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace plumb::cuda::matmul
