#pragma once
// Hopper's warpgroup MMA (wgmma, sm_90a) for the 128-row matmul tile and the prompt attention's score walk:
// the four warps of a warpgroup multiply 64 rows of x by 128 weight rows (64 query slots by 64 keys), both
// K-major in shared memory in the 128-byte swizzle that swizzled_chunk() writes. Each k16 step adds its 16
// products to each fp32 accumulator exactly as the mma.sync m16n8k16 chain of the other tiles does, and a
// step that starts from nothing (scale-d 0) as one adding to +0 (measured on the H200 over 377 million
// outputs of nine input kinds and four accumulator kinds, extremes, signed zeros and cancelling pairs
// included: 0 bits differ; test CudaWgmma), so a row's bits do not depend on which tile runs it (I1). Builds
// without sm_90a code take mma.sync for the same tile.
#include <cstdint>

#include "cuda/mma.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PLUMB_WGMMA 1
#endif

namespace plumb::cuda {

// Shared-memory matrix descriptor: 16-byte address units, 8-row groups 1024 bytes apart, 128-byte swizzle.
// The swizzle is a function of the address, so each tile starts 1024-byte aligned; a k16 step is 32 bytes on.
// It serves an N-major B operand of 64 columns too (the values walk's values, a row a key): the leading field
// spans 64-column blocks, of which there is one, and a k16 step is 16 rows, 2048 bytes, on.
__device__ __forceinline__ uint64_t wgmma_descriptor(uint32_t address) {
  return uint64_t{(address & 0x3ffffu) >> 4} | uint64_t{1} << 16 | uint64_t{1024 >> 4} << 32 |
         uint64_t{1} << 62;
}

// The descriptor of k16 step kk of a tile: 32 bytes on is 2 in the address field, which cannot carry out of
// it (shared addresses stay below 2^18), so the step is one add rather than the address masked and shifted.
__device__ __forceinline__ uint64_t wgmma_step(uint64_t tile_descriptor, int kk) {
  return tile_descriptor + static_cast<uint64_t>(2 * kk);
}

// Orders this thread's shared-memory writes (stores, cp.async) before the tensor cores' asynchronous reads.
__device__ __forceinline__ void fence_async_shared() {
#if PLUMB_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

#if PLUMB_WGMMA
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

#define PLUMB_ACC4(t) "+f"(acc[t][0]), "+f"(acc[t][1]), "+f"(acc[t][2]), "+f"(acc[t][3])
// acc = (accumulate ? acc : 0) + A[64, 16] * B[128, 16]^T; acc[t][e] is element e of n8 tile t in mma.sync's
// C fragment of the warp's rows. Starting from nothing gives the bits of adding to +0 (measured as above).
__device__ __forceinline__ void wgmma_m64n128k16(float (&acc)[16][4], uint64_t a, uint64_t b,
                                                 bool accumulate) {
  asm volatile(
      "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
      "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, accumulate, 1, 1, 0, "
      "0;\n}\n"
      : PLUMB_ACC4(0), PLUMB_ACC4(1), PLUMB_ACC4(2), PLUMB_ACC4(3), PLUMB_ACC4(4), PLUMB_ACC4(5),
        PLUMB_ACC4(6), PLUMB_ACC4(7), PLUMB_ACC4(8), PLUMB_ACC4(9), PLUMB_ACC4(10), PLUMB_ACC4(11),
        PLUMB_ACC4(12), PLUMB_ACC4(13), PLUMB_ACC4(14), PLUMB_ACC4(15)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}
// acc = (accumulate ? acc : 0) + A[64, 16] * B[64, 16]^T (the prompt attention's score walk: 64 query slots
// by a partition's 64 keys; with kNMajorB, the values walk's 64 slots by 64 value columns), in the same
// fragments as wgmma_m64n128k16.
template <int kNMajorB = 0>
__device__ __forceinline__ void wgmma_m64n64k16(float (&acc)[8][4], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31}, %32, %33, accumulate, 1, 1, 0, %35;\n}\n"
      : PLUMB_ACC4(0), PLUMB_ACC4(1), PLUMB_ACC4(2), PLUMB_ACC4(3), PLUMB_ACC4(4), PLUMB_ACC4(5),
        PLUMB_ACC4(6), PLUMB_ACC4(7)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)), "n"(kNMajorB));
}
#undef PLUMB_ACC4
#endif

}  // namespace plumb::cuda
