// Split prompt rows' outputs on the tiled path: k_attention.cu's values_kernel partials added in partition
// order by merge_kernel, bit for bit, without the partials: a block walks its tile's partitions in order and
// each slot's sums are added in registers (out = sum_0, then out = out + sum_j), sum_j = partition_values'
// mma k16 steps over the partition's keys from zero of p_j = bf16(exp(s_j - m) / l) (the weights
// normalize_kernel stores) and the values; out rounds to bf16 once. Weights and values come through kStages
// cp.async stages, the next partition's copying while one multiplies.
#include <algorithm>

#include "cuda/attention_tiles.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace attention {

namespace {

// A warp's running sums: its kScoreSlots slots by the block's kWalkColumns columns, 32 at a time.
using WalkSums = float[kWalkColumns / 32][4][4];

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
    copy16(stage + slot * kStageStride + piece * 8, source, seen);
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
      const uint4 eight = *reinterpret_cast<const uint4*>(
          stage + (kSlots + v * kPart + copy_row(n)) * kStageStride + copy_piece() * 8);
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
    copy_cache_rows(params, tile, tile.segment.values, chunk.kv_head, part, column0 + v * kDimChunk,
                    kRowPieces, key_lo, key_hi, stage + v * kPart * kStageStride);
}

// Adds the partition's sums of the stage to the warp's slots that see it, a slot's first partition starting
// its sum (only slot `only`, or every slot with -1).
__device__ void add_partition(const SlotEntry* slots, int rel, const uint16_t* stage, int only,
                              WalkSums& out) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (only >= 0 && warp != only / kScoreSlots) return;  // another warp's slot
  SlotPart rows[2];
  for (int half = 0; half < 2; ++half) {
    const int slot = warp * kScoreSlots + lane / 4 + half * 8;
    rows[half] = only >= 0 && slot != only ? SlotPart{false, false} : slot_part(slots[slot], rel);
  }
#pragma unroll
  for (int strip = 0; strip < kWalkColumns / 32; ++strip) {
    constexpr int kPieceStrips = kDimChunk / 32;
    float acc[4][4];
    partition_values<kStageStride>(stage + warp * kScoreSlots * kStageStride,
                                   stage + (kSlots + strip / kPieceStrips * kPart) * kStageStride,
                                   strip % kPieceStrips * 32, acc);
    each_fragment_element<1, 4>([&](int, int nt, int e) {
      const SlotPart& r = rows[e / 2];
      if (r.sees) out[strip][nt][e] = r.first ? acc[nt][e] : out[strip][nt][e] + acc[nt][e];
    });
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

// The slots' multiplications of a partition whose staged values hold one that is not finite: a slot that
// does not see its key would take 0 x inf where the decode kernel stages a zero, so each slot multiplies
// the values staged again with only the keys it sees. Every thread calls it; it waits for all copies.
__device__ void add_partition_slot_by_slot(const Params& params, const TileRows& tile, const HeadChunk& chunk,
                                           const SlotEntry* slots, int column0, int rel, uint16_t* stage,
                                           WalkSums& out) {
  const int64_t part = tile.part_lo + rel;
  for (int k = 0; k < kSlots; ++k) {
    if (!slot_part(slots[k], rel).sees) continue;  // the same for the whole block
    const int64_t key_lo = max(part * kPart, int64_t{slots[k].first}),
                  key_hi = min(part * kPart + kPart - 1, int64_t{slots[k].position});
    __syncthreads();  // the last slot's values are used
    copy_value_pieces(params, tile, chunk, part, column0, key_lo, key_hi, stage);
    copy_commit();
    copy_wait<0>();
    __syncthreads();
    add_partition(slots, rel, stage, k, out);
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
  extern __shared__ float4 dynamic_shared[];
  uint16_t* stages = reinterpret_cast<uint16_t*>(dynamic_shared);  // [kStages][kStageElements]
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
    // Every thread's copies are in, the stage copied next was used a step ago, and whether any staged
    // value is not finite.
    const bool non_finite = __syncthreads_or(copied_non_finite(stage)) != 0;
    copy_step(step + kStages - 1);
    if (non_finite)
      add_partition_slot_by_slot(params, tile, chunk, slots, column0, step, stage, out);
    else
      add_partition(slots, step, stage, -1, out);
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
