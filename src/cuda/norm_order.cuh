#pragma once
// The order of every norm kernel's sum of squares, the CPU backend's: element k to lane k % 16 of a 16-lane
// group, each lane's elements in ascending order, then a tree of 8, 4, 2, 1 to the group's first lane; and
// 1 / sqrt(mean + eps) from that total (--fmad=false: each step rounds on its own). k_norm.cu,
// k_head_norms.cu and k_residual_norm.cu keep the lanes' sequential sums; the tree and the inverse are here,
// once, with residual_norm's element, RoPE's pair rotation and the block-wide sum over a row staged
// lane-major.
#include <cstdint>

#include "cuda/bf16.cuh"

namespace plumb::cuda {

constexpr int kNormLanes = 16;

// The tree over each 16-lane group of the warp: the group's first lane ends with its lanes' total.
__device__ __forceinline__ float lane_group_total(float sum) {
  for (int width = kNormLanes / 2; width >= 1; width /= 2)
    sum = sum + __shfl_down_sync(0xffffffffu, sum, width, kNormLanes);
  return sum;
}

template <class Dim>
__device__ __forceinline__ float inverse_of_total(float total, Dim dim, float eps) {
  return 1.0f / sqrtf(total / static_cast<float>(dim) + eps);
}

// residual_norm's h_out element: bf16(h + bf16(o * inverse * weight)), then bf16(h_out * factor) when scaled
// (each step rounds on its own, --fmad=false), as every residual_norm kernel makes it.
__device__ __forceinline__ float residual_element(float o, float inverse, float weight, float h, bool scaled,
                                                  float factor) {
  float sum = round_bf16(h + round_bf16(o * inverse * weight));
  if (scaled) sum = round_bf16(sum * factor);
  return sum;
}

// RoPE's rotation of one pair (first, second) at angle theta, with c, s = bf16(cos/sin(theta)):
// low = bf16(bf16(first * c) + bf16(-second * s)), high = bf16(bf16(second * c) + bf16(first * s)).
struct PairRotation {
  float cosine, sine;
  __device__ __forceinline__ explicit PairRotation(float theta)
      : cosine(round_bf16(cosf(theta))), sine(round_bf16(sinf(theta))) {}
  // c and s as the constructor above made them (kept in a table).
  __device__ __forceinline__ PairRotation(float c, float s) : cosine(c), sine(s) {}
  __device__ __forceinline__ uint16_t low(float first, float second) const {
    return bf16_bits(round_bf16(first * cosine) + round_bf16(-second * sine));
  }
  __device__ __forceinline__ uint16_t high(float first, float second) const {
    return bf16_bits(round_bf16(second * cosine) + round_bf16(first * sine));
  }
};

// One pair's rotation (PairRotation) into out[i] and out[i + half], and the same bits into `copy` where it is
// not null.
__device__ __forceinline__ void rotate_pair(float first, float second, const PairRotation& rotation,
                                            int64_t i, int64_t half, uint16_t* out, uint16_t* copy) {
  const uint16_t low = rotation.low(first, second), high = rotation.high(first, second);
  out[i] = low;
  out[i + half] = high;
  if (copy != nullptr) {
    copy[i] = low;
    copy[i + half] = high;
  }
}

__device__ __forceinline__ void rotate_pair(float first, float second, float theta, int64_t i, int64_t half,
                                            uint16_t* out, uint16_t* copy) {
  rotate_pair(first, second, PairRotation(theta), i, half, out, copy);
}

// A staged row laid out lane-major for the sums: element k at (k % 16) * stride + k / 16, so that sum lane
// l's elements are contiguous and it reads them four at a time, in the same order. The stride is a lane's
// element count rounded up to 4, plus 4 where that is a multiple of 8, so that a half-warp's 16-byte reads
// take two wavefronts (the least for 256 bytes). Against the row in element order, read an element a lane at
// a time: a 1-row residual_norm 10.5 -> 9.6 us a launch, 4-bit 12B decode +0.7% at 1 stream (H200).
__host__ __device__ constexpr int lane_major_stride(int64_t dim) {
  const auto rounded = static_cast<int>((dim + kNormLanes - 1) / kNormLanes + 3) / 4 * 4;
  return rounded % 8 == 0 ? rounded + 4 : rounded;
}

constexpr size_t lane_major_bytes(int64_t dim) {
  return size_t{kNormLanes} * lane_major_stride(dim) * sizeof(float);
}

struct LaneMajorRow {
  float* slots;
  int stride;

  __device__ LaneMajorRow(float* staged, int64_t dim) : slots(staged), stride(lane_major_stride(dim)) {}
  __device__ float& operator[](int64_t k) const { return slots[k % kNormLanes * stride + k / kNormLanes]; }

  // Sum lane `lane`'s squares, its elements in ascending order.
  __device__ float lane_squares(int64_t dim, int lane) const {
    const auto count = static_cast<int>((dim - lane + kNormLanes - 1) / kNormLanes);
    const float* mine = slots + lane * stride;
    float sum = 0.0f;
    int j = 0;
#pragma unroll 8
    for (; j + 4 <= count; j += 4) {
      const float4 v = *reinterpret_cast<const float4*>(mine + j);
      sum = sum + v.x * v.x;
      sum = sum + v.y * v.y;
      sum = sum + v.z * v.z;
      sum = sum + v.w * v.w;
    }
    for (; j < count; ++j) sum = sum + mine[j] * mine[j];
    return sum;
  }
};

// Stages one vector of n bf16 values into shared memory as floats, 8 a load where both allow it (n % 8 == 0,
// 16-byte aligned), so each thread's loads are in flight together instead of one round trip per element.
template <class Row>  // LaneMajorRow, or a plain float* in element order
__device__ __forceinline__ void stage_vector(const uint16_t* source, const Row& target, int64_t n) {
  if (n % 8 == 0 && rows_aligned16(source, 0)) {
    for (int64_t c = threadIdx.x; c < n / 8; c += blockDim.x) {
      float values[8];
      unpack_bf16x8(reinterpret_cast<const uint4*>(source)[c], values);
#pragma unroll
      for (int j = 0; j < 8; ++j) target[8 * c + j] = values[j];
    }
  } else {
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) target[k] = bf16_value(source[k]);
  }
}

// 1 / sqrt(mean(x^2) + eps) of a staged vector, in inverse_rms's order (16 lanes, each sequential, then the
// tree), for the whole block: every thread must call it, and gets the value.
__device__ inline float block_inverse_rms(const LaneMajorRow& values, int64_t dim, float eps) {
  __shared__ float inverse;
  __syncthreads();  // the staging (or the caller's last writes) is done
  if (threadIdx.x < 32) {
    const int lane = static_cast<int>(threadIdx.x);
    float sum = lane < kNormLanes ? values.lane_squares(dim, lane) : 0.0f;
    sum = lane_group_total(sum);
    if (lane == 0) inverse = inverse_of_total(sum, dim, eps);
  }
  __syncthreads();
  return inverse;
}

}  // namespace plumb::cuda
