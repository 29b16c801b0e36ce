#pragma once
// The order of every norm kernel's sum of squares, the CPU backend's: element k to lane k % 16 of a 16-lane
// group, each lane's elements in ascending order, then a tree of 8, 4, 2, 1 to the group's first lane; and
// 1 / sqrt(mean + eps) from that total (--fmad=false: each step rounds on its own). k_norm.cu and
// k_residual_norm.cu keep the lanes' sequential sums; the tree and the inverse are here, once.
#include <cstdint>

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

}  // namespace plumb::cuda
