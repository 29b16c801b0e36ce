#pragma once
// Inline PTX for the tensor-core matmul: cp.async copies into shared memory, ldmatrix, and the bf16
// mma.sync m16n8k16 with fp32 accumulators (sm_80 and later). Each output element of an mma depends only on
// its own row of A, its own column of B and its own accumulator, so a row's bits never depend on the other
// rows.
#include <cstdint>

namespace plumb::cuda {

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes, or writes 16 zero bytes when `valid` is false (nothing is read then).
__device__ __forceinline__ void copy16(void* shared, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void copy4(void* shared, const void* global, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(shared)), "l"(global),
               "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void copy_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int Pending>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&fragment)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(fragment[0]), "=r"(fragment[1]), "=r"(fragment[2]), "=r"(fragment[3])
               : "r"(shared_address(shared)));
}

// ldmatrix from a shared-memory address (shared_address) computed once and offset per step.
__device__ __forceinline__ void ldmatrix_x4_at(uint32_t (&fragment)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(fragment[0]), "=r"(fragment[1]), "=r"(fragment[2]), "=r"(fragment[3])
               : "r"(address));
}

// ldmatrix with each 8 x 8 matrix transposed: a B operand from rows of k (k-major [k][n] in shared memory).
__device__ __forceinline__ void ldmatrix_x4_trans_at(uint32_t (&fragment)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(fragment[0]), "=r"(fragment[1]), "=r"(fragment[2]), "=r"(fragment[3])
               : "r"(address));
}

// acc += a (16x16, row) * b (16x8, col), bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Element e (0 to 3) of a lane's m16n8 accumulator fragment (mma.sync's C and D, and each warp's 16 rows of a
// wgmma D) sits at this row and column of its 16 x 8 tile.
__device__ __forceinline__ int fragment_row(int lane, int e) {
  return lane / 4 + (e / 2) * 8;
}

__device__ __forceinline__ int fragment_col(int lane, int e) {
  return (lane % 4) * 2 + e % 2;
}

// Calls f(mt, nt, e) for every element of a warp's kMTiles x kNTiles accumulator fragments, unrolled.
template <int kMTiles, int kNTiles, class F>
__device__ __forceinline__ void each_fragment_element(F&& f) {
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) f(mt, nt, e);
}

// Tiles of 64 bf16 per row (128 bytes = 8 chunks of 16); chunk c of row r sits at c ^ (r % 8) so that
// ldmatrix's eight rows hit eight different bank groups.
__device__ __forceinline__ int swizzled_chunk(int row, int chunk) {
  return row * 8 + (chunk ^ (row & 7));
}

}  // namespace plumb::cuda
