#pragma once
// The order of every norm kernel's sum of squares, the CPU backend's: element k to lane k % 16 of a 16-lane
// group, each lane's elements in ascending order, then a tree of 8, 4, 2, 1 to the group's first lane; and
// 1 / sqrt(mean + eps) from that total (--fmad=false: each step rounds on its own). k_norm.cu,
// k_head_norms.cu and k_residual_norm.cu keep the lanes' sequential sums; the tree and the inverse are here,
// once, with RoPE's pair rotation.
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

// RoPE's rotation of one pair (first, second) at angle theta, with c, s = bf16(cos/sin(theta)):
// low = bf16(bf16(first * c) + bf16(-second * s)), high = bf16(bf16(second * c) + bf16(first * s)).
struct PairRotation {
  float cosine, sine;
  __device__ __forceinline__ explicit PairRotation(float theta)
      : cosine(round_bf16(cosf(theta))), sine(round_bf16(sinf(theta))) {}
  __device__ __forceinline__ uint16_t low(float first, float second) const {
    return bf16_bits(round_bf16(first * cosine) + round_bf16(-second * sine));
  }
  __device__ __forceinline__ uint16_t high(float first, float second) const {
    return bf16_bits(round_bf16(second * cosine) + round_bf16(first * sine));
  }
};

// One pair's rotation (PairRotation) into out[i] and out[i + half], and the same bits into `copy` where it is
// not null.
__device__ __forceinline__ void rotate_pair(float first, float second, float theta, int64_t i, int64_t half,
                                            uint16_t* out, uint16_t* copy) {
  const PairRotation rotation(theta);
  const uint16_t low = rotation.low(first, second), high = rotation.high(first, second);
  out[i] = low;
  out[i + half] = high;
  if (copy != nullptr) {
    copy[i] = low;
    copy[i + half] = high;
  }
}

}  // namespace plumb::cuda
