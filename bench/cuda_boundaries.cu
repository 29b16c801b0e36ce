// The op bodies of cuda_boundaries.hpp and their two drivers. gemv: each warp takes rows warp, warp + all
// warps, ...; a lane adds its products w[j] x[j] for its 8 columns of each 256-wide chunk, chunks in
// ascending order (explicit fma, so both drivers' copies round alike), and the warp adds its lanes in a
// butterfly; lane 0 stores the row, rounded to bf16 once. norm: one block adds x[j]^2 by threads (j mod 256,
// ascending), then warps (a shuffle tree) and the 8 warps' sums in order, and scales x by the correctly
// rounded 1 / sqrt(mean + eps).
#include <cuda_bf16.h>

#include "cuda/dependent_launch.cuh"
#include "cuda_boundaries.hpp"

namespace plumb::bench {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kChunk = 256;                          // x's values a warp covers with one 16-byte load a lane
constexpr int kBatch = 8;                            // 16-byte weight loads a lane has in flight for one row
constexpr long long kTimeoutCycles = 2'000'000'000;  // about a second

__device__ __forceinline__ float low_of(uint32_t pair) {
  return __uint_as_float(pair << 16);
}
__device__ __forceinline__ float high_of(uint32_t pair) {
  return __uint_as_float(pair & 0xffff0000u);
}

__device__ __forceinline__ uint16_t bf16_bits(float value) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// acc + w[0] x[0] + ... + w[7] x[7], one rounding a term.
__device__ __forceinline__ float dot8(const uint4& w, const uint16_t* x, float acc) {
  const uint4 xv = *reinterpret_cast<const uint4*>(x);
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w}, xs[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc = __fmaf_rn(low_of(ws[i]), low_of(xs[i]), acc);
    acc = __fmaf_rn(high_of(ws[i]), high_of(xs[i]), acc);
  }
  return acc;
}

// The first batch of the warp's first row: weights only, so it may be loaded before the op ahead is done.
struct FirstBatch {
  uint4 w[kBatch];
};

__device__ __forceinline__ int64_t first_row() {
  return int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
}

__device__ __forceinline__ void load_first(const ChainOp& op, FirstBatch& first) {
  const int64_t row = first_row();
  if (row >= op.n) return;
  const uint16_t* w = op.weight + row * op.k + (threadIdx.x % 32) * 8;
  const int chunks = op.k / kChunk;
#pragma unroll
  for (int b = 0; b < kBatch; ++b)
    if (b < chunks) first.w[b] = __ldcs(reinterpret_cast<const uint4*>(w + b * kChunk));
}

// Asks L2 for up to `bytes` of the warp's weights after its first batch, in the order it reads them, so that
// they stream while the block waits for the op ahead (none where bytes is 0).
__device__ __forceinline__ void prefetch_rows(const ChainOp& op, int bytes) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t all_warps = int64_t{gridDim.x} * kWarps, row_bytes = int64_t{op.k} * 2;
  int64_t left = bytes;
  for (int64_t row = first_row(); row < op.n && left > 0; row += all_warps) {
    const char* base = reinterpret_cast<const char*>(op.weight + row * op.k);
    const int64_t from = row == first_row() ? min(int64_t{kBatch} * kChunk * 2, row_bytes) : 0;
    const int64_t span = min(row_bytes - from, left);
    for (int64_t at = from + lane * 128; at < from + span; at += 32 * 128)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(base + at));
    left -= span;
  }
}

// x's first `count` values into shared memory, read from L2 (another SM may have written them since this
// one last cached them); the block calls.
__device__ __forceinline__ void stage(const uint16_t* x, int count, uint16_t* staged) {
  for (int i = threadIdx.x; i < count / 8; i += kThreads)
    reinterpret_cast<uint4*>(staged)[i] = __ldcg(reinterpret_cast<const uint4*>(x) + i);
  __syncthreads();
}

__device__ __forceinline__ void gemv_rows(const ChainOp& op, const FirstBatch& first, const uint16_t* staged,
                                          uint16_t* out) {
  const int lane = static_cast<int>(threadIdx.x % 32), chunks = op.k / kChunk;
  const int64_t all_warps = int64_t{gridDim.x} * kWarps;
  for (int64_t row = first_row(); row < op.n; row += all_warps) {
    const uint16_t* w = op.weight + row * op.k + lane * 8;
    const bool from_first = row == first_row();
    float acc = 0.0f;
    for (int c0 = 0; c0 < chunks; c0 += kBatch) {
      uint4 batch[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (c0 + b < chunks)
          batch[b] = from_first && c0 == 0 ? first.w[b]
                                           : __ldcs(reinterpret_cast<const uint4*>(w + (c0 + b) * kChunk));
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (c0 + b < chunks) acc = dot8(batch[b], staged + (c0 + b) * kChunk + lane * 8, acc);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc = __fadd_rn(acc, __shfl_xor_sync(~0u, acc, offset));
    if (lane == 0) out[row] = bf16_bits(acc);
  }
}

// The norm op's body on one block; `staged` holds x's n values.
__device__ __forceinline__ void norm_vector(const uint16_t* staged, int n, float* warp_sums, uint16_t* out) {
  float sum = 0.0f;
  for (int j = threadIdx.x; j < n; j += kThreads) {
    const float v = __uint_as_float(uint32_t{staged[j]} << 16);
    sum = __fmaf_rn(v, v, sum);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum = __fadd_rn(sum, __shfl_down_sync(~0u, sum, offset));
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total = __fadd_rn(total, warp_sums[w]);
  const float inverse = __frsqrt_rn(__fadd_rn(__fdiv_rn(total, static_cast<float>(n)), 1e-6f));
  for (int j = threadIdx.x; j < n; j += kThreads)
    out[j] = bf16_bits(__fmul_rn(__uint_as_float(uint32_t{staged[j]} << 16), inverse));
}

__global__ void __launch_bounds__(kThreads)
    gemv_kernel(ChainOp op, const uint16_t* x, uint16_t* out, int prefetch_bytes) {
  __shared__ __align__(16) uint16_t staged[kChainMaxK];
  FirstBatch first{};
  load_first(op, first);
  if (prefetch_bytes > 0) prefetch_rows(op, prefetch_bytes);
  cuda::wait_for_previous_kernel();
  stage(x, op.k, staged);
  gemv_rows(op, first, staged, out);
}

__global__ void __launch_bounds__(kThreads) norm_kernel(ChainOp op, const uint16_t* x, uint16_t* out) {
  __shared__ __align__(16) uint16_t staged[kChainMaxK];
  __shared__ float warp_sums[kWarps];
  cuda::wait_for_previous_kernel();
  stage(x, op.n, staged);
  norm_vector(staged, op.n, warp_sums, out);
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* counter) {
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(counter) : "memory");
  return value;
}

// Returns once `counter` reaches `target` (thread 0 polls; the block meets at the barrier). A wait past the
// timeout, or one that finds another block's timeout flagged, gives up and sets gave_up, which skips the
// block's later waits: the run ends within about a second, its outputs wrong and *failed set.
__device__ __forceinline__ void wait_arrivals(const unsigned* counter, unsigned target, unsigned* failed,
                                              bool& gave_up) {
  if (threadIdx.x == 0 && !gave_up) {
    const long long start = clock64();
    for (unsigned spins = 1; load_acquire(counter) < target; ++spins) {
      if (spins % 256 == 0 && (load_acquire(failed) != 0u || clock64() - start > kTimeoutCycles)) {
        atomicExch(failed, 1u);
        gave_up = true;
        break;
      }
    }
  }
  __syncthreads();
}

// The block's part of the op is written: counted once every thread's stores are ordered before the count.
__device__ __forceinline__ void arrive(unsigned* counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1u);
  }
}

__device__ __forceinline__ unsigned op_blocks(const ChainOp& op) {
  return op.kind == kGemvOp ? gridDim.x : 1u;
}

__global__ void __launch_bounds__(kThreads)
    persistent_kernel(const ChainOp* ops, int count, uint16_t* first_activations,
                      uint16_t* second_activations, unsigned* arrivals, unsigned epoch, unsigned* failed,
                      int prefetch_bytes) {
  __shared__ __align__(16) uint16_t staged[kChainMaxK];
  __shared__ float warp_sums[kWarps];
  bool gave_up = false;  // thread 0's
  for (int i = 0; i < count; ++i) {
    const ChainOp op = ops[i];
    const uint16_t* x = i % 2 == 0 ? first_activations : second_activations;
    uint16_t* out = i % 2 == 0 ? second_activations : first_activations;
    if (op.kind == kNormOp && blockIdx.x != 0) continue;  // the other blocks go on to the next op's weights
    FirstBatch first{};
    if (op.kind == kGemvOp) load_first(op, first);
    if (op.kind == kGemvOp && prefetch_bytes > 0) prefetch_rows(op, prefetch_bytes);
    if (i > 0) wait_arrivals(arrivals + i - 1, epoch * op_blocks(ops[i - 1]), failed, gave_up);
    if (op.kind == kGemvOp) {
      stage(x, op.k, staged);
      gemv_rows(op, first, staged, out);
    } else {
      stage(x, op.n, staged);
      norm_vector(staged, op.n, warp_sums, out);
    }
    arrive(arrivals + i);
  }
}

}  // namespace

cudaError_t chain_blocks_per_sm(int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, persistent_kernel, kThreads, 0);
}

cudaError_t launch_chain_ops(const ChainOp* ops, int count, uint16_t* const activations[2], int grid,
                             int prefetch_bytes, cudaStream_t stream) {
  for (int i = 0; i < count; ++i) {
    const uint16_t* x = activations[i % 2];
    uint16_t* out = activations[(i + 1) % 2];
    const cudaError_t code =
        ops[i].kind == kGemvOp
            ? cuda::launch_dependent(gemv_kernel, dim3(static_cast<unsigned>(grid)), kThreads, 0, stream,
                                     ops[i], x, out, prefetch_bytes)
            : cuda::launch_dependent(norm_kernel, dim3(1), kThreads, 0, stream, ops[i], x, out);
    if (code != cudaSuccess) return code;
  }
  return cudaGetLastError();
}

cudaError_t launch_chain_persistent(const ChainOp* device_ops, int count, uint16_t* const activations[2],
                                    unsigned* arrivals, unsigned epoch, unsigned* failed, int grid,
                                    int prefetch_bytes, cudaStream_t stream) {
  uint16_t *first_activations = activations[0], *second_activations = activations[1];
  void* args[] = {&device_ops, &count,  &first_activations, &second_activations, &arrivals,
                  &epoch,      &failed, &prefetch_bytes};
  return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(persistent_kernel), dim3(grid),
                                     dim3(kThreads), args, 0, stream);
}

}  // namespace plumb::bench
