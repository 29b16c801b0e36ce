// head_norms with each vector in a half-warp's registers: v_out = bf16(v * inv_v); n = bf16(x * inv * w) for
// q and k, out = (PairRotation(p * inv_freq[i]).low(n[i], n[i + half]), .high(...)), inv = 1 / sqrt(mean(x^2)
// + eps). Lane l holds elements l + 16j, so its sequential sum is the CPU's lane l sum (norm_order.cuh) and
// the bits are k_norm.cu's head_norms_kernel's; a vector costs one load round trip instead of one a batch of
// 8 elements, and nothing is read after the first write, so q, k and v may be written in place.

#include "cuda/dependent_launch.cuh"
#include "cuda/head_norms_params.cuh"
#include "cuda/launchers.hpp"
#include "cuda/norm_order.cuh"

namespace plumb::cuda {

namespace {

constexpr int kLanes = kNormLanes;
constexpr int kThreads = 256;
constexpr int kVectorsPerBlock = kThreads / kLanes;
// Decode calls: more rows (prompts) take the kernel for any head_dim, the same bits. At 2048 rows this
// kernel's 115 registers at head_dim 256 (2 blocks an SM) made 12B prompts about 1% slower (H200).
constexpr int64_t kLanesMaxRows = 63;

// A lane's elements l + 16j (j < kPer) of one vector as floats; 0 past the vector (head_dim under 16).
template <int kPer>
struct LaneVector {
  float at[kPer];

  __device__ __forceinline__ void load(const uint16_t* x, int dim, int lane, bool active) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int k = lane + j * kLanes;
      at[j] = active && k < dim ? bf16_value(x[k]) : 0.0f;
    }
  }

  // 1 / sqrt(mean(x^2) + eps) in the CPU's order; every lane of the warp must call it, and gets its group's.
  __device__ __forceinline__ float inverse_rms(int dim, float eps) const {
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) sum = sum + at[j] * at[j];
    const float total = __shfl_sync(0xffffffffu, lane_group_total(sum), 0, kLanes);
    return inverse_of_total(total, dim, eps);
  }
};

// The rotated bits of a lane's elements: pairs (l + 16j, l + 16j + half) lie in one lane when kPer is even;
// at kPer 1 (head_dim up to 16) lane l's partner is lane l +- half, whose value `partner` the caller
// shuffled.
template <int kPer>
__device__ __forceinline__ void rotate_lane(const LaneVector<kPer>& n, float partner, float position,
                                            const float* inv_freq, const float2* rotations, int dim, int lane,
                                            uint16_t* out, uint16_t* copy) {
  const int half = dim / 2;
  if constexpr (kPer == 1) {
    if (lane >= dim) return;
    const bool first = lane < half;
    const PairRotation rotation(position * inv_freq[first ? lane : lane - half]);
    const uint16_t bits = first ? rotation.low(n.at[0], partner) : rotation.high(partner, n.at[0]);
    out[lane] = bits;
    if (copy != nullptr) copy[lane] = bits;
  } else {
#pragma unroll
    for (int j = 0; j < kPer / 2; ++j) {
      const int i = lane + j * kLanes;
      if (rotations != nullptr)
        rotate_pair(n.at[j], n.at[j + kPer / 2], PairRotation(rotations[i].x, rotations[i].y), i, half, out,
                    copy);
      else
        rotate_pair(n.at[j], n.at[j + kPer / 2], position * inv_freq[i], i, half, out, copy);
    }
  }
}

// Whether every vector of this block is of one row (head_norms_vector's order: the q vectors by row, then the
// kv vectors by row), so that one table of its pairs' rotations serves them all.
__device__ __forceinline__ bool block_of_one_row(const HeadNormsParams& params, int64_t& row) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kVectorsPerBlock;
  const int64_t vectors = params.q.rows * params.q.heads + params.k.rows * params.k.heads;
  int64_t h, last_row;
  bool active, first_q, last_q;
  head_norms_vector(params, first, row, h, active, first_q);
  head_norms_vector(params, min(first + kVectorsPerBlock, vectors) - 1, last_row, h, active, last_q);
  return first_q == last_q ? row == last_row : params.q.rows == 1;
}

// The q vectors, then the kv vectors, a half-warp each (head_norms_vector); a kv vector writes its value (and
// its cache slot's) from registers, then its rotated key. kTable: where the block's vectors are of one row,
// its threads make each pair's PairRotation once into shared memory (the same cosf and sinf of the same
// angle), instead of every vector making all of them; launched for calls of one row (launch_lanes).
template <int kPer, bool kTable>
__global__ void __launch_bounds__(kThreads)
    head_norms_lanes_kernel(const __grid_constant__ HeadNormsParams params) {
  __shared__ float inv_freq[kPer * kLanes / 2];
  __shared__ float2 rotations[kTable ? kPer * kLanes / 2 : 1];
  const int lane = static_cast<int>(threadIdx.x) % kLanes, dim = static_cast<int>(params.q.dim);
  int64_t r, h;
  bool active, is_q;
  const RmsNormArgs& norm = head_norms_vector(
      params, static_cast<int64_t>(blockIdx.x) * kVectorsPerBlock + threadIdx.x / kLanes, r, h, active, is_q);
  for (int i = static_cast<int>(threadIdx.x); i < dim / 2; i += kThreads) inv_freq[i] = params.inv_freq[i];
  LaneVector<kPer> weight;  // no launch writes the weights: read before the wait
  if (norm.weight != nullptr)
    weight.load(norm.weight, dim, lane, active);
  else
    for (float& w : weight.at) w = 1.0f;  // x * inv * 1 is x * inv, bit for bit
  wait_for_previous_kernel();
  bool table = false;
  if constexpr (kTable) {
    int64_t row;
    table = block_of_one_row(params, row);
    const float position = static_cast<float>(params.positions[row]);
    static_assert(kPer * kLanes / 2 <= kThreads, "a thread a pair");
    if (const int i = static_cast<int>(threadIdx.x); table && i < dim / 2) {
      const PairRotation rotation(position * params.inv_freq[i]);
      rotations[i] = make_float2(rotation.cosine, rotation.sine);
    }
  }
  const RmsNormArgs& v = params.v;
  LaneVector<kPer> x, v_x;
  x.load(norm.x + r * norm.x_stride + h * dim, dim, lane, active);
  v_x.load(v.x + r * v.x_stride + h * dim, dim, lane, active && !is_q);
  const float v_inverse = v_x.inverse_rms(dim, v.eps), inverse = x.inverse_rms(dim, norm.eps);
  __syncthreads();  // inv_freq (and the rotations) are staged
  uint16_t *cache_keys = nullptr, *cache_values = nullptr;
  if (active && !is_q) {
    cache_at(params, r, h, dim, cache_keys, cache_values);
    uint16_t* v_out = v.out + r * v.out_stride + h * dim;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int k = lane + j * kLanes;
      if (k >= dim) break;
      const uint16_t bits = bf16_bits(v_x.at[j] * v_inverse);
      v_out[k] = bits;
      if (cache_values != nullptr) cache_values[k] = bits;
    }
  }
  LaneVector<kPer>& n = x;  // the normed values, in place
#pragma unroll
  for (int j = 0; j < kPer; ++j) n.at[j] = round_bf16(x.at[j] * inverse * weight.at[j]);
  const int partner_lane = lane < dim / 2 ? lane + dim / 2 : lane - dim / 2;
  const float partner = kPer == 1 ? __shfl_sync(0xffffffffu, n.at[0], partner_lane, kLanes) : 0.0f;
  if (active)
    rotate_lane(n, partner, static_cast<float>(params.positions[r]), inv_freq, table ? rotations : nullptr,
                dim, lane, norm.out + r * norm.out_stride + h * dim, cache_keys);
}

}  // namespace

// Not 512 (Gemma 4's global layers): held in registers, 32 a lane at 166 registers, it measured no faster
// than the kernel for any head_dim at 1 to 32 streams (H200).
bool head_norms_lanes_fit(int64_t dim, int64_t rows) {
  static const bool on = env_switch_on("PLUMB_CUDA_HEAD_NORMS_LANES");
  if (!on || rows > kLanesMaxRows) return false;
  if (dim >= 2 && dim <= kLanes) return dim % 2 == 0;
  return dim == 32 || dim == 64 || dim == 128 || dim == 256;
}

namespace {

// The kernel for kPer elements a lane, with the rotation table for calls of one row at head_dim 256 (H100:
// 5.87 against 6.21 us a launch in a decode graph; at 32 rows 8.67 against 7.67, and at 64 and 128 the table
// spilled 4 to 8 bytes of registers: nvcc 13.0, sm_90a).
template <int kPer>
cudaError_t launch_lanes(const HeadNormsParams& params, unsigned blocks, cudaStream_t stream) {
  auto kernel = head_norms_lanes_kernel<kPer, false>;
  if constexpr (kPer == 16)
    if (params.q.rows == 1 && params.k.rows == 1) kernel = head_norms_lanes_kernel<kPer, true>;
  return launch_dependent(kernel, blocks, kThreads, 0, stream, params);
}

}  // namespace

cudaError_t launch_head_norms_lanes(const HeadNormsParams& params, int64_t vectors, cudaStream_t stream) {
  const unsigned blocks = blocks_for(vectors, kVectorsPerBlock);
  switch (params.q.dim) {
    case 32:
      return launch_lanes<2>(params, blocks, stream);
    case 64:
      return launch_lanes<4>(params, blocks, stream);
    case 128:
      return launch_lanes<8>(params, blocks, stream);
    case 256:
      return launch_lanes<16>(params, blocks, stream);
    default:
      if (!head_norms_lanes_fit(params.q.dim, params.q.rows)) return cudaErrorInvalidValue;
      return launch_lanes<1>(params, blocks, stream);
  }
}

}  // namespace plumb::cuda
