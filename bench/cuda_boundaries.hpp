#pragma once
// What an op boundary costs a decode step, two ways over the same op bodies (cuda_boundaries.cu): each op a
// dependent launch, as the backend queues them (programmatic stream serialization, weights loaded before the
// wait), or each op a phase of one persistent kernel whose blocks load the op's first weights and then wait
// for the op before it to count its blocks' arrivals. The same sums in the same order either way, so the
// two ways' outputs are equal bit for bit.
#include <cuda_runtime.h>

#include <cstdint>

namespace plumb::cuda {
class CudaBackend;
}  // namespace plumb::cuda

namespace plumb::bench {

// The chains below, each run both ways and checked equal, with their times (cuda_boundaries_bench.cpp).
void bench_boundaries(cuda::CudaBackend& backend, double bandwidth);

enum ChainOpKind : int32_t {
  kGemvOp = 0,  // out[r] = bf16(sum_j W[r][j] x[j]) for rows r < n, over all the grid's warps
  kNormOp = 1,  // out[j] = bf16(x[j] / sqrt(mean(x^2) + eps)) for j < n, by one block
};

// One op of a chain: op i reads the activations op i - 1 wrote (activations[i % 2]) and writes the others.
struct ChainOp {
  const uint16_t* weight;  // gemv: n rows of k bf16 values; norm: none
  int32_t kind;
  int32_t n;  // gemv: rows of W; norm: the vector's length
  int32_t k;  // gemv: x's length, a multiple of 256 up to kChainMaxK
};

constexpr int kChainMaxK = 15360;

// Blocks an SM of the persistent kernel (its grid is that times the SMs, each block resident throughout);
// the launches' gemv grids take the same count, so both ways split the rows alike.
cudaError_t chain_blocks_per_sm(int* blocks);

// The ops as launches (a gemv on `grid` blocks, a norm on one), each waiting for the one ahead. Where
// prefetch_bytes is not 0, each gemv warp also asks L2 for that many bytes of its weights past its first
// batch before it waits (in either way).
cudaError_t launch_chain_ops(const ChainOp* ops, int count, uint16_t* const activations[2], int grid,
                             int prefetch_bytes, cudaStream_t stream);

// The ops as one cooperative launch of `grid` blocks. device_ops is the ops' table in device memory;
// arrivals holds a counter an op, zeroed before the first run, and run `epoch` (1, 2, ...) waits for each
// to reach epoch times the op's blocks. A wait longer than about a second sets *failed and ends every wait
// after it, so a grid that is not resident cannot hang the bench.
cudaError_t launch_chain_persistent(const ChainOp* device_ops, int count, uint16_t* const activations[2],
                                    unsigned* arrivals, unsigned epoch, unsigned* failed, int grid,
                                    int prefetch_bytes, cudaStream_t stream);

}  // namespace plumb::bench
