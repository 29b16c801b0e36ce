// Split prompt rows' outputs on the tiled path: k_attention.cu's values_kernel partials added in partition
// order by merge_kernel, bit for bit, without the partials: a block walks its tile's partitions in order and
// each slot's sums are added in registers (out = sum_0, then out = out + sum_j), sum_j = partition_values'
// mma k16 steps over the partition's keys from zero of p_j = bf16(exp(s_j - m) / l) (the weights
// normalize_kernel stores) and the values; out rounds to bf16 once. Weights and values come through kStages
// cp.async stages, the next partition's copying while one multiplies. On sm_90a a partition's sums are the
// warpgroup's wgmma steps (the values an N-major operand) from 128-byte swizzled rows, the bits of the
// mma.sync steps that other builds take from padded rows (CudaWgmma).
#include <algorithm>

#include "cuda/attention_tiles.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"
#include "cuda/wgmma.cuh"

namespace plumb::cuda {

namespace attention {

namespace {

// A warp's running sums: its kScoreSlots slots by the block's kWalkColumns columns, 32 at a time.
using WalkSums = float[kWalkColumns / 32][4][4];

// Where a stage's rows go: swizzled for wgmma, padded for ldmatrix.
#if PLUMB_WGMMA
using WalkRows = SwizzledRows;
static_assert(kDimChunk == 64, "a piece's sums are one wgmma m64n64 chain");
#else
using WalkRows = PaddedRows;
#endif

// Whether a slot sees partition part_lo + rel (SlotEntry), and whether it is the slot's first.
struct SlotPart {
  bool sees, first;
};

__device__ __forceinline__ SlotPart slot_part(const SlotEntry& e, int rel) {
  return {rel >= e.lo && rel <= e.hi, rel == e.lo};
}

// The weight rows of partition part_lo + rel of the thread's slots (zeros for a slot that misses it), copied
// into the stage's first half (cp.async, not committed).
__device__ void copy_weights(const Params& params, const SlotEntry* slots, int rel, uint16_t* stage) {
  const int piece = copy_piece();
#pragma unroll
  for (int n = 0; n < kCopiesPerThread; ++n) {
    const int slot = copy_row(n);
    const SlotEntry& e = slots[slot];
    const bool seen = slot_part(e, rel).sees;
    const uint16_t* source = params.weights;
    if (seen) source += (e.part_row + rel - e.lo) * kPart + piece * 8;
    copy16(stage + WalkRows{}(slot, piece), source, seen);
  }
}

// Once the stage's group is in: true in a thread that copied a value that is not finite (each thread reads
// back only the pieces it copied, which needs no barrier). A bf16's exponent bits plus one carry into its
// sign bit only when they are all ones (inf or NaN); the low half's sum (at most 0x8000) stays in its half.
__device__ bool copied_non_finite(const uint16_t* stage) {
  uint32_t carries = 0;
#pragma unroll
  for (int v = 0; v < kWalkPieces; ++v)
#pragma unroll
    for (int n = 0; n < kCopiesPerThread; ++n) {
      const uint4 eight =
          *reinterpret_cast<const uint4*>(stage + WalkRows{}(kSlots + v * kPart + copy_row(n), copy_piece()));
      for (const uint32_t pair : {eight.x, eight.y, eight.z, eight.w})
        carries |= (pair & 0x7f807f80u) + 0x00800080u;
    }
  return (carries & 0x80008000u) != 0;
}

// The partition's value rows, columns column0.. of each of the stage's pieces (cp.async, not committed).
__device__ void copy_value_pieces(const Params& params, const TileRows& tile, const HeadChunk& chunk,
                                  int64_t part, int column0, int64_t key_lo, int64_t key_hi,
                                  uint16_t* stage) {
#pragma unroll
  for (int v = 0; v < kWalkPieces; ++v)
    copy_cache_rows<WalkRows>(params, tile, tile.segment.values, chunk.kv_head, part, column0 + v * kDimChunk,
                              kRowPieces, key_lo, key_hi, stage + v * kPart * WalkRows::kRowElements);
}

// acc[t][e] = sum_j p_j v_j over the stage's partition for the warp's slots and value piece v's columns
// 8 t + fragment_col(lane, e): on sm_90a the warpgroup's wgmma k16 steps from zero (every warp calls it),
// else the warp's mma.sync steps (partition_values), 32 columns at a time.
__device__ __forceinline__ void piece_sums(const uint16_t* stage, int v, float (&acc)[kDimChunk / 8][4]) {
  const uint16_t* piece = stage + (kSlots + v * kPart) * WalkRows::kRowElements;  // its value rows
#if PLUMB_WGMMA
  const uint64_t weights = wgmma_descriptor(shared_address(stage));
  const uint64_t values = wgmma_descriptor(shared_address(piece));  // N-major: a row a key
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kPart / kDotStep; ++kk)  // a k16 step: 32 bytes of a weight row, 16 value rows
    wgmma_m64n64k16<1>(acc, wgmma_step(weights, kk), values + uint64_t{kDotStep * kDimChunk * 2 / 16} * kk,
                       kk != 0);
  wgmma_commit();
  wgmma_wait<0>();
#else
  const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
  for (int strip = 0; strip < kDimChunk / 32; ++strip) {
    float part[4][4];
    partition_values<kStageStride>(stage + warp * kScoreSlots * kStageStride, piece, strip * 32, part);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[strip * 4 + nt][e] = part[nt][e];
  }
#endif
}

// Adds the partition's sums of the stage to the warp's slots that see it, a slot's first partition starting
// its sum (only slot `only`, or every slot with -1). Every thread calls it.
__device__ void add_partition(const SlotEntry* slots, int rel, const uint16_t* stage, int only,
                              WalkSums& out) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int v = 0; v < kWalkPieces; ++v) {  // a piece at a time: one piece's sums live
    float acc[kDimChunk / 8][4];
    piece_sums(stage, v, acc);
    SlotPart rows[2];  // read after the steps, so that they hold no registers across them
    for (int half = 0; half < 2; ++half) {
      const int slot = warp * kScoreSlots + lane / 4 + half * 8;
      rows[half] = only >= 0 && slot != only ? SlotPart{false, false} : slot_part(slots[slot], rel);
    }
#pragma unroll
    for (int t = 0; t < kDimChunk / 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const SlotPart& r = rows[e / 2];
        const int tile = v * kDimChunk / 8 + t;  // the n8 tile of the block's columns
        float& sum = out[tile / 4][tile % 4][e];
        if (r.sees) sum = r.first ? acc[t][e] : sum + acc[t][e];
      }
  }
}

// The warp's slots' sums as bf16 into their rows of out (a slot of the tile sees its first partition, so
// every sum was started).
__device__ void write_sums(const Params& params, const TileRows& tile, const HeadChunk& chunk, int column0,
                           const WalkSums& out) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int slot = warp * kScoreSlots + lane / 4 + half * 8, t = slot / params.tile_heads,
              h = slot % params.tile_heads;
    if (t >= tile.rows || h >= chunk.count) continue;
    uint16_t* row = params.out + (tile.first_row + t) * params.out_stride +
                    static_cast<int64_t>(chunk.first + h) * params.head_dim;
#pragma unroll
    for (int strip = 0; strip < kWalkColumns / 32; ++strip)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int d = column0 + strip * 32 + nt * 8 + (lane % 4) * 2;
        if (d < params.head_dim) row[d] = bf16_bits(out[strip][nt][2 * half]);
        if (d + 1 < params.head_dim) row[d + 1] = bf16_bits(out[strip][nt][2 * half + 1]);
      }
  }
}

// The next slot after `slot` that sees partition part_lo + rel, or kSlots.
__device__ __forceinline__ int next_seeing_slot(const SlotEntry* slots, int rel, int slot) {
  while (++slot < kSlots && !slot_part(slots[slot], rel).sees) {
  }
  return slot;
}

// Adds a partition's sums: every slot's at once, or, where its staged values hold one that is not finite,
// slot by slot (a slot that does not see that key would take 0 x inf where the decode kernel stages a zero),
// each slot multiplying the values staged again with only the keys it sees. Every thread calls it; the
// slot by slot path waits for all copies.
__device__ void add_stage(const Params& params, const TileRows& tile, const HeadChunk& chunk,
                          const SlotEntry* slots, int column0, int rel, bool non_finite, uint16_t* stage,
                          WalkSums& out) {
  const int64_t part = tile.part_lo + rel;
  int only = non_finite ? next_seeing_slot(slots, rel, -1) : -1;
  while (only < kSlots) {
    if (only >= 0) {  // the same for the whole block
      const int64_t key_lo = max(part * kPart, int64_t{slots[only].first}),
                    key_hi = min(part * kPart + kPart - 1, int64_t{slots[only].position});
      __syncthreads();  // the last slot's values are used
      copy_value_pieces(params, tile, chunk, part, column0, key_lo, key_hi, stage);
      copy_commit();
      copy_wait<0>();
      fence_async_shared();  // the copies before the tensor cores' reads
      __syncthreads();
    }
    add_partition(slots, rel, stage, only, out);
    only = only >= 0 ? next_seeing_slot(slots, rel, only) : kSlots;
  }
}

// A values walk block's strips of kWalkColumns output columns across the head dimension.
__host__ __device__ inline int walk_strips(int head_dim) {
  return (head_dim + kWalkColumns - 1) / kWalkColumns;
}

// One block per (kv head, chunk of heads and strip of kWalkColumns columns, tile) walks the tile's
// partitions in order.
__global__ void __launch_bounds__(kThreads) values_walk_kernel(Params params) {
  wait_for_previous_kernel();
  extern __shared__ __align__(128) char dynamic_shared[];
  uint16_t* stages = reinterpret_cast<uint16_t*>(  // [kStages][kStageElements], 1024-byte aligned
      dynamic_shared + (1024 - shared_address(dynamic_shared) % 1024) % 1024);
  __shared__ TileRows tile;
  __shared__ SlotEntry slots[kSlots];
  if (!load_tile(params, tile)) return;
  const int strips = walk_strips(params.head_dim);
  const HeadChunk chunk = head_chunk(params, static_cast<int>(blockIdx.y) / strips, params.tile_heads);
  const int column0 = static_cast<int>(blockIdx.y) % strips * kWalkColumns;
  const int steps = static_cast<int>(tile.part_hi - tile.part_lo + 1);  // step s: partition part_lo + s
  fill_slots(params, tile, chunk, slots);
  const auto copy_step = [&](int step) {  // a commit group per step, empty past the last
    if (step < steps) {
      uint16_t* stage = stages + step % kStages * kStageElements;
      copy_weights(params, slots, step, stage);
      copy_value_pieces(params, tile, chunk, tile.part_lo + step, column0, tile.key_lo, tile.key_hi, stage);
    }
    copy_commit();
  };
  for (int step = 0; step < kStages - 1; ++step) copy_step(step);
  WalkSums out;
  for (int step = 0; step < steps; ++step) {
    uint16_t* stage = stages + step % kStages * kStageElements;
    copy_wait<kStages - 2>();  // this step's group is in (the thread's copies)
    fence_async_shared();      // ... and ordered before the tensor cores' reads
    // Every thread's copies are in, the stage copied next was used a step ago, and whether any staged
    // value is not finite.
    const bool non_finite = __syncthreads_or(copied_non_finite(stage)) != 0;
    copy_step(step + kStages - 1);
    add_stage(params, tile, chunk, slots, column0, step, non_finite, stage, out);
  }
  write_sums(params, tile, chunk, column0, out);
}

}  // namespace

cudaError_t launch_value_walk(const Params& params, cudaStream_t stream) {
  const cudaError_t code = cudaFuncSetAttribute(
      values_walk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kWalkShared));
  if (code != cudaSuccess) return code;
  const int strips = walk_strips(params.head_dim);
  const dim3 grid(1, static_cast<unsigned>(params.kv_heads * params.head_chunks * strips),
                  static_cast<unsigned>(params.tiles));
  launch_dependent(values_walk_kernel, grid, kThreads, kWalkShared, stream, params);
  return cudaGetLastError();
}

}  // namespace attention

}  // namespace plumb::cuda
