#pragma once
// A tiled matmul member's element once its launch is done (MemberSums, matmul_plan.hpp): its K-split
// partials added in split order and rounded to bf16 once (k_matmul.cu's split_total and reduce_column), or
// the bf16 the kernel stored where its splits did not run across blocks. For the reduce launches that run
// another op's steps on the sums (k_head_norms_reduce.cu).
#include <cstdint>

#include "cuda/bf16.cuh"
#include "cuda/matmul_plan.hpp"
#include "cuda/split_sums.cuh"

namespace plumb::cuda::matmul {

// Element `col` of a member's row `row` as bf16 bits.
__device__ __forceinline__ uint16_t member_bits(const MemberSums& m, int64_t row, int64_t col) {
  if (!m.cross) return m.out[row * m.out_stride + col];
  // Eight splits' loads at once: a reduce of few blocks waits on each round trip (12B's sliding q 8, k 15).
  float total[1];
  add_splits<1, 8>(
      m.splits, [&](int s, int) { return m.partial[(s * m.rows + row) * m.n + col]; }, total);
  return bf16_bits(total[0]);
}

}  // namespace plumb::cuda::matmul
