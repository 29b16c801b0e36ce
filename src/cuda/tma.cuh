#pragma once
// Hopper's tensor memory accelerator and shared-memory barriers (sm_90): a 2-D tile copied from global memory
// by one thread, completing on an mbarrier that counts its bytes, and the barriers a producer warp and the
// consumer warpgroups hand stages over with. Tiles land in the 128-byte swizzle that swizzled_chunk() and
// wgmma_descriptor() assume.
#include <cuda.h>

#include <cstdint>

#include "cuda/mma.cuh"

namespace plumb::cuda {

__device__ __forceinline__ void barrier_init(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals));
}

// Makes initialized barriers visible to the async proxy (the copies) and the block.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void barrier_arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

// Arrives and expects `bytes` more from copies completing on the barrier before its phase ends.
__device__ __forceinline__ void barrier_arrive_expect(uint64_t* barrier, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

// Waits until the barrier's phase of this parity has completed (a fresh barrier's parity-1 phase counts as
// completed, so a producer's first wait on an empty slot passes).
__device__ __forceinline__ void barrier_wait(uint64_t* barrier, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_loop:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_loop;\n}\n" ::"r"(shared_address(barrier)),
      "r"(parity)
      : "memory");
}

// tile <- the box of `map` at (inner, outer), zeros outside the tensor; completes `bytes` on the barrier.
__device__ __forceinline__ void tile_copy(void* tile, const CUtensorMap* map, int32_t inner, int32_t outer,
                                          uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(shared_address(tile)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(shared_address(barrier))
      : "memory");
}

// tile_copy into the same place of each CTA of the cluster in `ctas` (a bit a CTA rank), completing its bytes
// on the barrier at the same place in each.
__device__ __forceinline__ void tile_copy_multicast(void* tile, const CUtensorMap* map, int32_t inner,
                                                    int32_t outer, uint64_t* barrier, uint16_t ctas) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], "
      "[%1, {%2, %3}], [%4], %5;\n" ::"r"(shared_address(tile)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(shared_address(barrier)), "h"(ctas)
      : "memory");
}

// This CTA's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// Arrives on the barrier at this barrier's place in CTA `cta` of the cluster (release at CTA scope, as a
// local arrive: a cluster-scope release costs a fence each arrival, and the reads it orders are this CTA's
// own).
__device__ __forceinline__ void barrier_arrive_in(uint64_t* barrier, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(shared_address(barrier)), "r"(cta));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// The float at `local` in this CTA's shared memory, read at the same place in CTA `cta` of the cluster.
__device__ __forceinline__ float load_from_cta(const float* local, uint32_t cta) {
  uint32_t remote;
  float value;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(shared_address(local)), "r"(cta));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(value) : "r"(remote) : "memory");
  return value;
}

// Every thread of every CTA of the cluster meets here (each CTA's barriers initialized before anyone copies
// into them; none exits while another may still copy or arrive into it).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

}  // namespace plumb::cuda
