#pragma once
// The tiled matmul's block (k_matmul.cu's kernel and k_matmul_tiled_group.cu's grouped one): the software
// pipelines of mma.sync and wgmma tiles that fold each K split, one block's output tile, and the splits'
// reduce of a column; and the host pieces both files plan and launch with.
#include <cuda_runtime.h>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_blocks.cuh"
#include "cuda/matmul_plan.hpp"
#include "cuda/wgmma.cuh"

namespace plumb::cuda::matmul {

// Runs k tiles [kt0, kt1) through one software pipeline of mma.sync tiles, folding each K split; with
// kOneSplit the range is one split, whose fold would copy acc: acc is the total (total aliases it).
template <class L, int kBits, bool kOneSplit = false>
__device__ void run_tiles(const Params& p, char* shared, Accumulators<L>& acc, Accumulators<L>& total,
                          int64_t m0, int64_t n0, int64_t kt0, int64_t kt1, int warp_m, int warp_n) {
  uint4* dequantized = reinterpret_cast<uint4*>(shared + L::kStages * L::kStageBytes);
  const StageLoads<L, kBits> load{p, shared, m0, n0};
  const int64_t tiles = kt1 - kt0;
  load.weights_ahead(L::kStages - 1, kt0, tiles);
  wait_for_previous_kernel();
  load.x_ahead(L::kStages - 1, kt0, tiles);
  each_fragment_element<L::kMTiles, L::kNTiles>([&](int mt, int nt, int e) { acc[mt][nt][e] = 0.0f; });
  SplitCursor<int64_t> split(kt0, kt1, p.tiles_per_split);
  for (int64_t t = 0; t < tiles; ++t) {
    copy_wait<L::kStages - 2>();
    __syncthreads();
    const char* stage = shared + (t % L::kStages) * L::kStageBytes;
    const uint4* b_tile = reinterpret_cast<const uint4*>(stage + L::kABytes);
    if constexpr (kBits != 0) {
      dequantize<kBits>(stage + L::kABytes, dequantized, p, n0, kt0 + t);
      __syncthreads();
      b_tile = dequantized;
    }
    const int64_t next = t + L::kStages - 1;
    if (next < tiles) {
      load.x(static_cast<int>(next % L::kStages), kt0 + next);
      load.weight(static_cast<int>(next % L::kStages), kt0 + next);
    }
    copy_commit();
    multiply<L>(reinterpret_cast<const uint4*>(stage), b_tile, acc, warp_m, warp_n);
    if constexpr (!kOneSplit) {
      if (split.ends(kt0 + t)) {
        fold_split<L>(acc, total, split.first());
        split.next();
      }
    }
  }
  copy_wait<0>();
}

#if PLUMB_WGMMA
// The 128-row tile's pipeline on sm_90a: tile t's wgmma steps run while tile t + 1 is staged and dequantized
// (two dequantized tiles alternate), so a stage is refilled two tiles after its multiply began, once every
// warpgroup has waited for that multiply; kStages - 2 tiles are in flight ahead. The accumulators are touched
// only once no step is in flight (at a split's end), else the compiler would wait for the steps there.
template <class L, int kBits>
__device__ void run_tiles_warpgroups(const Params& p, char* shared, Accumulators<L>& acc,
                                     Accumulators<L>& total, int64_t m0, int64_t n0, int64_t kt0,
                                     int64_t kt1) {
  constexpr int kAhead = L::kStages - 2;
  char* dequantized = shared + L::kStages * L::kStageBytes;
  const StageLoads<L, kBits> load{p, shared, m0, n0};
  const int64_t tiles = kt1 - kt0;
  load.weights_ahead(kAhead, kt0, tiles);
  wait_for_previous_kernel();
  load.x_ahead(kAhead, kt0, tiles);
  SplitCursor<int64_t> split(kt0, kt1, p.tiles_per_split);
  for (int64_t t = 0; t < tiles; ++t) {
    copy_wait<kAhead - 1>();
    fence_async_shared();
    __syncthreads();
    const char* stage = shared + (t % L::kStages) * L::kStageBytes;
    const uint4* b_tile = reinterpret_cast<const uint4*>(stage + L::kABytes);
    if constexpr (kBits != 0) {
      uint4* tile = reinterpret_cast<uint4*>(dequantized + (t % 2) * (L::kDequantizedBytes / 2));
      dequantize<kBits>(stage + L::kABytes, tile, p, n0, kt0 + t);
      fence_async_shared();
      __syncthreads();
      b_tile = tile;
    }
    const int64_t kt = kt0 + t;
    const uint32_t a_rows = shared_address(stage) + (threadIdx.x / 128) * 64 * kTileK * 2;
    multiply_warpgroup<L>(a_rows, shared_address(b_tile), acc, split.starts(kt));
    const int64_t next = t + kAhead;
    if (next < tiles) {
      load.x(static_cast<int>(next % L::kStages), kt0 + next);
      load.weight(static_cast<int>(next % L::kStages), kt0 + next);
    }
    copy_commit();
    if (split.ends(kt)) {
      wgmma_wait<0>();
      fold_split<L, false>(acc, total, split.first());
      split.next();
    } else {
      wgmma_wait<1>();
    }
  }
  wgmma_wait<0>();  // the last tile ends a split, so nothing is in flight; the compiler cannot tell
  copy_wait<0>();
}
#endif

// One block: output tile `place` over the k tiles of cross-block split `split` (all of k without them).
template <int kRowsTile, int kBits, int kStages = 0, bool kOneSplit = false>
__device__ __forceinline__ void matmul_block(const Params& p, TilePlace place, int64_t split) {
  using L = Layout<kRowsTile, kBits, kStages>;
  extern __shared__ __align__(128) char shared_bytes[];
  char* shared = shared_bytes;
  if constexpr (L::kAlignBytes != 0)
    shared += (L::kAlignBytes - shared_address(shared_bytes) % L::kAlignBytes) % L::kAlignBytes;
  const int64_t n0 = place.n_tile * kTileN;
  const int64_t m0 = place.m_tile * kRowsTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / L::kWarpsN, warp_n = warp % L::kWarpsN;
  const int64_t kt0 = p.cross ? split * p.tiles_per_split : 0;
  const int64_t kt1 = p.cross ? min(kt0 + p.tiles_per_split, p.k_tiles) : p.k_tiles;
  if constexpr (kOneSplit && !L::kWarpgroups) {  // the block's tiles are one split: no second set
    Accumulators<L> acc;
    run_tiles<L, kBits, true>(p, shared, acc, acc, m0, n0, kt0, kt1, warp_m, warp_n);
    write_tile<L>(p, acc, m0, n0, split, warp_m, warp_n, lane);
    return;
  }
  Accumulators<L> acc, total;  // run_tiles starts acc at zero; wgmma's first step of a split overwrites it
#if PLUMB_WGMMA
  if constexpr (L::kWarpgroups) {
    run_tiles_warpgroups<L, kBits>(p, shared, acc, total, m0, n0, kt0, kt1);
  } else
#endif
  {
    run_tiles<L, kBits>(p, shared, acc, total, m0, n0, kt0, kt1, warp_m, warp_n);
  }
  write_tile<L>(p, total, m0, n0, split, warp_m, warp_n, lane);
}

// The bf16 32-row tile takes three pipeline stages: 60 KiB of shared memory, so three blocks an SM where four
// stages fit two. The 3840 x 15360 down projection's 270 blocks at 32 rows then run in one wave instead of
// 264 and a tail of 6 (+2.5% at 32-stream decode). The grouped kernel takes them too: tiled_group_fits sends
// it only members whose blocks each run one split (cross-block or unsplit), so a block keeps one set of sums,
// 78 registers under the bound where two sets took 119 and two blocks an SM (+2% at 32-stream decode).
template <int kRowsTile, int kBits>
constexpr int kTileStages = kRowsTile == 32 && kBits == 0 ? 3 : 0;

// t = partial[0]; t += partial[s] for s = 1.. in order; the same additions a single block makes.
__device__ __forceinline__ float split_total(const Params& p, int64_t col, int64_t row) {
  float total = p.partial[row * p.n + col];
  for (int s = 1; s < p.splits; ++s) total = total + p.partial[(s * p.rows + row) * p.n + col];
  return total;
}

__device__ __forceinline__ void reduce_column(const Params& p, int64_t col, int64_t row) {
  if (col >= p.n) return;
  const float total = split_total(p, col, row);
  if (p.out_f32) {
    static_cast<float*>(p.out)[row * p.out_stride + col] = total;
  } else {
    static_cast<uint16_t*>(p.out)[row * p.out_stride + col] = bf16_bits(total);
  }
}

// k_matmul.cu: a call's operands as the tiled kernels take them (the plan's fields are set per slab), the
// plan's fields set on them, and one tiled launch of the plan.
Params params_for(const MatmulArgs& launch, void* scratch);
void apply_plan(Params& p, const Plan& plan);
cudaError_t run_any(const Params& p, const Plan& plan, int bits, cudaStream_t stream);

}  // namespace plumb::cuda::matmul
