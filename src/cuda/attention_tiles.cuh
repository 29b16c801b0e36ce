#pragma once
// The prompt tiles' pieces (k_attention_tiles.cu, k_attention_walk.cu): a block's tile of rows and the
// partitions they see, its query vectors (slots), and the cp.async stages the walks copy into: a thread
// copies the same 16-byte piece of the same kCopiesPerThread rows of every stage.
#include <cstddef>
#include <cstdint>

#include "cuda/attention_device.cuh"

namespace plumb::cuda::attention {

constexpr int kDimChunk = 64;                // head-dim columns of the queries and keys a score stage holds
constexpr int kStageStride = kDimChunk + 8;  // bf16 a staged row (ldmatrix's eight rows 16 bytes apart)
constexpr int kStages =
    2;  // cp.async stages: one copying while one multiplies (three left fewer blocks an SM)
// Value pieces of kDimChunk columns a values walk stage holds for one copy of the weight rows. One: a wgmma
// m64n64 chain a stage at 94 registers, five blocks an SM (H100: sliding layer 0.373 -> 0.363 ms, global
// 0.659 -> 0.644); two halved the weight copies for the mma.sync walk (global 0.661 -> 0.646 ms then).
constexpr int kWalkPieces = 1;
constexpr int kWalkColumns = kWalkPieces * kDimChunk;  // output columns of a values walk block
constexpr int kRowPieces = kDimChunk / 8;              // 16-byte pieces of a staged row
constexpr int kRowCopies = kThreads / kRowPieces;      // rows a pass of the block's threads copies
constexpr int kCopiesPerThread = kSlots / kRowCopies;
// A values walk stage: kSlots weight rows, then kWalkPieces pieces of kPart value rows, of kStageStride
// (mma.sync) or kDimChunk (wgmma, 1024-byte aligned: the host sizes for both).
constexpr int kStageElements = (kSlots + kWalkPieces * kPart) * kStageStride;
constexpr size_t kWalkShared = size_t{kStages} * kStageElements * sizeof(uint16_t) + 1024;
static_assert(kStageElements * sizeof(uint16_t) % 1024 == 0, "each stage starts 1024-byte aligned");
static_assert(kSlots == kPart, "a thread copies the same rows of the slots' and the keys' halves");
static_assert(kSlots % kRowCopies == 0, "the block's threads copy whole rows");
static_assert(kWeightStride == kStageStride, "weight rows are staged as partition_values reads them");

// The block's rows: tile blockIdx.z of the chunk (tiles of params.tile_rows rows, none crossing a segment),
// each row's first visible key and position, and the absolute partitions lo..hi that any of them sees.
struct TileRows {
  SegmentEntry segment;
  int64_t first_row;
  int rows;
  int64_t part_lo, part_hi;  // partitions any row sees
  int64_t key_lo, key_hi;    // the lowest first visible key and the highest position of the rows
  int64_t first[kSlots], position[kSlots];
};

__device__ inline bool find_tile(const Params& params, int64_t index, SegmentEntry& segment,
                                 int64_t& first_row, int& rows) {
  for (int s = 0; s < params.segment_count; ++s) {
    const int64_t tiles = (params.segments[s].rows + params.tile_rows - 1) / params.tile_rows;
    if (index < tiles) {
      segment = params.segments[s];
      first_row = segment.first_row + index * params.tile_rows;
      rows = static_cast<int>(min(int64_t{params.tile_rows}, segment.rows - index * params.tile_rows));
      return true;
    }
    index -= tiles;
  }
  return false;
}

// Fills `tile` (shared): thread 0 finds the tile, a thread per row reads its row's keys (the rows' position
// loads in flight together rather than one after another), then the first warp joins their spans; false for
// a block past the chunk's tiles (the same for every thread).
__device__ inline bool load_tile(const Params& params, TileRows& tile) {
  if (threadIdx.x == 0) {
    tile.rows = 0;
    find_tile(params, blockIdx.z, tile.segment, tile.first_row, tile.rows);
  }
  __syncthreads();
  if (tile.rows == 0) return false;
  if (threadIdx.x < tile.rows) {
    const RowKeys row = row_keys(params, tile.first_row + threadIdx.x);
    tile.first[threadIdx.x] = row.first;
    tile.position[threadIdx.x] = row.position;
  }
  __syncthreads();
  if (threadIdx.x < 32) {  // min and max are the same in any order
    int64_t key_lo = INT64_MAX, key_hi = -1;
    for (int t = static_cast<int>(threadIdx.x); t < tile.rows; t += 32) {
      key_lo = min(key_lo, tile.first[t]);
      key_hi = max(key_hi, tile.position[t]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      key_lo = min(key_lo, __shfl_xor_sync(kFullMask, key_lo, offset));
      key_hi = max(key_hi, __shfl_xor_sync(kFullMask, key_hi, offset));
    }
    if (threadIdx.x == 0) {
      tile.key_lo = key_lo;
      tile.key_hi = key_hi;
      tile.part_lo = key_lo / kPart;
      tile.part_hi = key_hi / kPart;
    }
  }
  __syncthreads();
  return true;
}

// A slot's scratch row (row_head x span: its first partition's stats), the partitions its row sees relative
// to the tile's first (lo..hi; empty for a slot past the tile or the chunk's heads) and the row's first
// visible key and position. Made once a block (fill_slots), so that a walk's per-partition tests take two
// comparisons instead of divisions by the tile's heads.
struct SlotEntry {
  int64_t part_row;
  int lo, hi;
  int first, position;  // positions are int32
};

__device__ inline void fill_slots(const Params& params, const TileRows& tile, const HeadChunk& chunk,
                                  SlotEntry* slots) {
  for (int slot = static_cast<int>(threadIdx.x); slot < kSlots; slot += kThreads) {
    const int t = slot / params.tile_heads, h = slot % params.tile_heads;
    SlotEntry e{0, 1, 0, 0, 0};
    if (t < tile.rows && h < chunk.count) {
      e.part_row = ((tile.first_row + t) * params.heads + chunk.first + h) * params.span;
      e.lo = static_cast<int>(tile.first[t] / kPart - tile.part_lo);
      e.hi = static_cast<int>(tile.position[t] / kPart - tile.part_lo);
      e.first = static_cast<int>(tile.first[t]);
      e.position = static_cast<int>(tile.position[t]);
    }
    slots[slot] = e;
  }
  __syncthreads();
}

// A query vector of the block (row t of the tile, head h of the chunk; slot = t * heads + h) at partition
// part_lo + rel: whether its row sees it, its index among the row's partitions, and the visible keys lo..hi
// of the partition (relative to its base).
struct Slot {
  bool valid;
  int64_t part_row;
  int jrel, lo, hi;
};

__device__ __forceinline__ Slot slot_at(const SlotEntry& e, int64_t part, int rel) {
  Slot s{};
  if (rel < e.lo || rel > e.hi) return s;
  const int base = static_cast<int>(part) * kPart;
  s.valid = true;
  s.part_row = e.part_row;
  s.jrel = rel - e.lo;
  s.lo = max(base, e.first) - base;
  s.hi = min(base + kPart - 1, e.position) - base;
  return s;
}

// The thread's n-th staged row of a stage half (0 .. kSlots - 1) and its 16-byte piece of the row.
__device__ __forceinline__ int copy_row(int n) {
  return static_cast<int>(threadIdx.x) / kRowPieces + n * kRowCopies;
}

__device__ __forceinline__ int copy_piece() {
  return static_cast<int>(threadIdx.x) % kRowPieces;
}

// Where a staged row's 16-byte piece goes, in bf16 from the stage: padded rows of kStageStride (the values
// walk's mma.sync steps), or rows of kDimChunk in the 128-byte swizzle that wgmma reads (swizzled_chunk).
struct PaddedRows {
  static constexpr int kRowElements = kStageStride;
  __device__ int operator()(int row, int piece) const { return row * kStageStride + piece * 8; }
};

struct SwizzledRows {
  static constexpr int kRowElements = kDimChunk;
  __device__ int operator()(int row, int piece) const { return swizzled_chunk(row, piece) * 8; }
};

// The partition's key or value rows at positions key_lo..key_hi, columns column0 + 8 piece for the pieces
// below `pieces`, copied into the stage's second half (cp.async, not committed); zeros for other positions
// and past head_dim. Row jj's cache slot is (base + jj) % capacity: from the partition's first slot with one
// test a row where the cache holds a partition (rows from `wrap` on wrap around once), else a division.
template <class Place = PaddedRows>
__device__ __forceinline__ void copy_cache_rows(const Params& params, const TileRows& tile,
                                                const uint16_t* cache, int kv_head, int64_t part, int column0,
                                                int pieces, int64_t key_lo, int64_t key_hi,
                                                uint16_t* staged) {
  const int piece = copy_piece();
  if (piece >= pieces) return;
  const int64_t base = part * kPart, capacity = tile.segment.capacity;
  const int64_t base_slot = ring_slot(base, capacity), wrap = capacity - base_slot;
  const int c = column0 + piece * 8;
  // The rows present, lo..hi of the partition (none past head_dim).
  const int lo = static_cast<int>(min(max(key_lo - base, int64_t{0}), int64_t{kPart}));
  const int hi =
      c < params.head_dim ? static_cast<int>(min(max(key_hi - base, int64_t{-1}), int64_t{kPart - 1})) : -1;
  const int64_t row_stride = int64_t{params.kv_heads} * params.head_dim;
  const uint16_t* column = cache + int64_t{kv_head} * params.head_dim + c;
#pragma unroll
  for (int n = 0; n < kCopiesPerThread; ++n) {
    const int jj = copy_row(n);
    const bool present = jj >= lo && jj <= hi;
    const int64_t slot = capacity < kPart ? ring_slot(base + jj, capacity)
                                          : base_slot + jj - (jj >= wrap ? capacity : int64_t{0});
    copy16(staged + Place{}(kSlots + jj, piece), present ? column + slot * row_stride : cache, present);
  }
}

}  // namespace plumb::cuda::attention
