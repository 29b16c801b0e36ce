#pragma once
// residual_norm's steps on one row, for a block of kResidualThreads threads whose row of o is staged
// lane-major: h_out = bf16(h + bf16(o * inv_o * w_post)), bf16(h_out * factor) when scaled, then next =
// bf16(h_out * inv_h * w_next), each inv = 1 / sqrt(mean(x^2) + eps) in norm_order.cuh's order. Thread t
// holds columns t + kResidualThreads i. k_norm.cu's block-a-row kernel stages o from memory;
// k_residual_norm_reduce.cu's cluster adds o's K-split partials into it.
#include <cstdint>

#include "cuda/bf16.cuh"
#include "cuda/kernel_args.hpp"
#include "cuda/norm_order.cuh"

namespace plumb::cuda {

constexpr int kResidualThreads = 512;  // 3840 / 8 = 480 packed loads: one per thread

template <int kPerThread>
struct ResidualNormRow {
  float post_weight[kPerThread], next_weight[kPerThread], h[kPerThread];

  // The weights: no launch writes them, so a kernel reads them before its wait.
  __device__ __forceinline__ void load_weights(const ResidualNormArgs& launch, int dim) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kResidualThreads;
      post_weight[i] = k < dim ? bf16_value(launch.post.weight[k]) : 0.0f;
      next_weight[i] = k < dim ? bf16_value(launch.next_norm.weight[k]) : 0.0f;
    }
  }

  __device__ __forceinline__ void load_h(const ResidualNormArgs& launch, int64_t r, int dim) {
    const uint16_t* h_row = launch.h + r * launch.h_stride;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kResidualThreads;
      h[i] = k < dim ? bf16_value(h_row[k]) : 0.0f;
    }
  }

  // From the staged o on: the post norm, h_out (staged over o as rounded, and stored), the next norm.
  __device__ __forceinline__ void finish(const ResidualNormArgs& launch, int64_t r,
                                         const LaneMajorRow& values, int dim) {
    const float post_inverse = block_inverse_rms(values, dim, launch.post.eps);
    uint16_t* h_out = launch.h_out + r * launch.h_out_stride;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kResidualThreads;
      if (k >= dim) break;
      const float normed = round_bf16(values[k] * post_inverse * post_weight[i]);
      float sum = round_bf16(h[i] + normed);
      if (launch.scaled) sum = round_bf16(sum * launch.factor);
      values[k] = sum;
      h_out[k] = bf16_bits(sum);
      h[i] = sum;  // this thread's own h_out, for the next norm's products
    }
    const float next_inverse = block_inverse_rms(values, dim, launch.next_norm.eps);
    uint16_t* out = launch.next_norm.out + r * launch.next_norm.out_stride;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kResidualThreads;
      if (k >= dim) break;
      out[k] = bf16_bits(h[i] * next_inverse * next_weight[i]);
    }
  }
};

}  // namespace plumb::cuda
