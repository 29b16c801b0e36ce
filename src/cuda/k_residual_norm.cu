// residual_norm, a warp a row: h_out = bf16(h + bf16(o * inv_o * w_post)), bf16(h_out * factor) when scaled,
// then out = bf16(h_out * inv_h * w_next), each inv = 1 / sqrt(mean(x^2) + eps) in fp32 (--fmad=false).
// The sums of squares keep k_norm.cu's order (element k to lane k % 16, each lane's elements in ascending
// order, then a tree of 8, 4, 2, 1), so the bits are those of the block-per-row kernel and the CPU backend.
// The block-per-row kernel (k_norm.cu) runs that order on 16 of its 512 threads; here a warp holds a row, so
// a prompt's rows run their sequential sums side by side. k_norm.cu sends calls of 64 rows or more here: at
// decode rows one warp's chain of load batches is slower than the block's staged row.
#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"
#include "cuda/norm_order.cuh"

namespace plumb::cuda {

namespace {

constexpr int kLanes = kNormLanes;           // the sum order's lanes
constexpr int kRowWarps = 8;                 // rows a block
constexpr int kChunk = 32 * 8;               // a warp's elements a step: 8 a lane, one 16-byte load each
constexpr int kLaneTerms = kChunk / kLanes;  // each sum lane's terms a step

constexpr int kBatch = 4;  // chunks whose loads are in flight together

struct Eight {
  float v[8];
};

__device__ __forceinline__ Eight unpack8(const uint4& packed) {
  Eight out;
  unpack_bf16x8(packed, out.v);
  return out;
}

// The lane's 16 bytes of kBatch chunks from chunk start c0 (those inside the row), loaded together so the
// warp waits on memory once a batch instead of once a chunk.
struct Batch {
  uint4 raw[kBatch];
  __device__ __forceinline__ Batch(const uint16_t* row, int c0, int first, int dim) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (c0 + b * kChunk < dim) raw[b] = *reinterpret_cast<const uint4*>(row + c0 + b * kChunk + first);
  }
  __device__ __forceinline__ Eight operator[](int b) const {
    return unpack8(raw[b]);
  }
};

// Stores eight values, each rounded to bf16 (exact for values that are bf16 already).
__device__ __forceinline__ void store8(uint16_t* row, int64_t at, const Eight& x) {
  *reinterpret_cast<uint4*>(row + at) = pack_bf16x8(x.v);
}

// The warp's running sum of squares in the lanes' order: the chunk's values go through the warp's shared
// row, and lanes 0-15 add their kLaneTerms elements (lane, lane + 16, ...) in ascending order.
__device__ __forceinline__ void add_squares(float* staged, const Eight& x, int lane, float& sum) {
  __syncwarp();  // the last chunk's reads are done
  float4* slots = reinterpret_cast<float4*>(staged + lane * 8);
  slots[0] = make_float4(x.v[0], x.v[1], x.v[2], x.v[3]);
  slots[1] = make_float4(x.v[4], x.v[5], x.v[6], x.v[7]);
  __syncwarp();
  if (lane < kLanes) {
#pragma unroll
    for (int t = 0; t < kLaneTerms; ++t) {
      const float value = staged[lane + t * kLanes];
      sum = sum + value * value;
    }
  }
}

// 1 / sqrt(mean + eps) from lanes 0-15's sums (norm_order.cuh); every lane of the warp gets it.
__device__ __forceinline__ float warp_inverse_rms(float sum, int dim, float eps) {
  return inverse_of_total(__shfl_sync(0xffffffffu, lane_group_total(sum), 0), dim, eps);
}

__global__ void __launch_bounds__(kRowWarps * 32) residual_norm_rows_kernel(ResidualNormArgs launch) {
  wait_for_previous_kernel();
  __shared__ __align__(16) float staged_rows[kRowWarps][kChunk];
  const RmsNormArgs& post = launch.post;
  const RmsNormArgs& next = launch.next_norm;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowWarps + warp;
  if (r >= post.rows) return;  // no block barrier below
  float* staged = staged_rows[warp];
  const int dim = static_cast<int>(post.dim);
  const uint16_t* o = post.x + r * post.x_stride;
  const uint16_t* h = launch.h + r * launch.h_stride;
  uint16_t* h_out = launch.h_out + r * launch.h_out_stride;
  uint16_t* out = next.out + r * next.out_stride;
  const int first = lane * 8;
  float sum = 0.0f;
  for (int c0 = 0; c0 < dim; c0 += kBatch * kChunk) {
    const Batch x(o, c0, first, dim);
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (c0 + b * kChunk < dim) add_squares(staged, x[b], lane, sum);
  }
  const float post_inverse = warp_inverse_rms(sum, dim, post.eps);
  sum = 0.0f;
  for (int c0 = 0; c0 < dim; c0 += kBatch * kChunk) {
    const Batch x(o, c0, first, dim), w(post.weight, c0, first, dim), residual(h, c0, first, dim);
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (c0 + b * kChunk >= dim) break;
      const Eight xb = x[b], wb = w[b], hb = residual[b];
      Eight s;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        s.v[j] = residual_element(xb.v[j], post_inverse, wb.v[j], hb.v[j], launch.scaled, launch.factor);
      store8(h_out, c0 + b * kChunk + first, s);
      add_squares(staged, s, lane, sum);
    }
  }
  const float next_inverse = warp_inverse_rms(sum, dim, next.eps);
  for (int c0 = 0; c0 < dim; c0 += kBatch * kChunk) {
    const Batch s(h_out, c0, first, dim), w(next.weight, c0, first, dim);  // this lane's own stores
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (c0 + b * kChunk >= dim) break;
      const Eight sb = s[b], wb = w[b];
      Eight y;
#pragma unroll
      for (int j = 0; j < 8; ++j) y.v[j] = sb.v[j] * next_inverse * wb.v[j];
      store8(out, c0 + b * kChunk + first, y);
    }
  }
}

}  // namespace

bool residual_norm_rows_fit(const ResidualNormArgs& launch) {
  const RmsNormArgs& post = launch.post;
  const RmsNormArgs& next = launch.next_norm;
  return post.dim % kChunk == 0 && post.dim < (int64_t{1} << 30) && rows_aligned16(post.x, post.x_stride) &&
         rows_aligned16(post.weight, 0) && rows_aligned16(next.weight, 0) &&
         rows_aligned16(launch.h, launch.h_stride) && rows_aligned16(launch.h_out, launch.h_out_stride) &&
         rows_aligned16(next.out, next.out_stride);
}

cudaError_t launch_residual_norm_rows(const ResidualNormArgs& launch, cudaStream_t stream) {
  launch_dependent(residual_norm_rows_kernel, blocks_for(launch.post.rows, kRowWarps), kRowWarps * 32, 0,
                   stream, launch);
  return cudaGetLastError();
}

}  // namespace plumb::cuda
