#pragma once
// K-split partials added in order with their loads in flight together: the decode kernels' split reduce
// (k_matmul_decode.cuh) and the head_norms reduce (k_head_norms_reduce.cu).
namespace plumb::cuda {

// total[b] = load(0, b); total[b] += load(s, b) for s = 1.. in split order (a single block's additions), for
// kWays sums at once. The loads of kSplitBatch splits are issued together (past the last split they read it
// again, unadded: no branch between them), so a sum waits on memory once a batch of splits, not once a split.
template <int kWays, int kSplitBatch = 4, class Load>
__device__ __forceinline__ void add_splits(int splits, const Load& load, float (&total)[kWays]) {
  for (int s0 = 0; s0 < splits; s0 += kSplitBatch) {
    float value[kSplitBatch][kWays];
#pragma unroll
    for (int j = 0; j < kSplitBatch; ++j)
#pragma unroll
      for (int b = 0; b < kWays; ++b) value[j][b] = load(min(s0 + j, splits - 1), b);
#pragma unroll
    for (int j = 0; j < kSplitBatch; ++j)
#pragma unroll
      for (int b = 0; b < kWays; ++b) {
        if (s0 + j == 0) {
          total[b] = value[j][b];
        } else if (s0 + j < splits) {
          total[b] = total[b] + value[j][b];
        }
      }
  }
}

}  // namespace plumb::cuda
