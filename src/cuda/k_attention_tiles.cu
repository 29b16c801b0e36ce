// Attention for many query rows of a stream at once (prompts): the scores, (max, sum exp) and split partials
// of k_attention.cu's score_kernel and values_kernel, bit for bit (the same steps in the same order:
// s_j = scale * (q · k_j) with partition_dots' mma steps, p_j = bf16(exp(s_j - m) / l), sum p_j v_j over a
// partition's keys with partition_values' mma steps), with a block serving kSlots query vectors (a tile of
// rows times a few heads of one kv group, kScoreSlots a warp) so that each partition's keys or values are
// staged in shared memory once for all of them instead of once per row. Tiles never cross a segment; a block
// walks the absolute partitions its rows see, and each row keeps its own window within them.
#include <algorithm>

#include "cuda/attention_device.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace attention {

namespace {

constexpr size_t kStaticTileBytes = 8 << 10;  // at least score_tile_kernel's static shared memory

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

__device__ bool find_tile(const Params& params, int64_t index, SegmentEntry& segment, int64_t& first_row,
                          int& rows) {
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
// loads in flight together rather than one after another), then thread 0 joins their spans; false for a block
// past the chunk's tiles (the same for every thread).
__device__ bool load_tile(const Params& params, TileRows& tile) {
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
  if (threadIdx.x == 0) {
    tile.key_lo = INT64_MAX;
    tile.key_hi = -1;
    for (int t = 0; t < tile.rows; ++t) {
      tile.key_lo = min(tile.key_lo, tile.first[t]);
      tile.key_hi = max(tile.key_hi, tile.position[t]);
    }
    tile.part_lo = tile.key_lo / kPart;
    tile.part_hi = tile.key_hi / kPart;
  }
  __syncthreads();
  return true;
}

// A query vector of the block: row t of the tile, head h of the chunk; slot = t * heads + h.
struct Slot {
  bool valid;  // a row and head of the block whose keys meet partition part
  int t, h;
  int64_t row_head, jrel;
  int lo, hi;  // visible keys lo..hi of the partition (relative to its base)
};

__device__ Slot slot_at(const Params& params, const TileRows& tile, const HeadChunk& chunk, int slot,
                        int64_t part) {
  Slot s{};
  s.t = slot / params.tile_heads;
  s.h = slot % params.tile_heads;
  if (s.t >= tile.rows || s.h >= chunk.count) return s;
  const int64_t base = part * kPart, first = tile.first[s.t], position = tile.position[s.t];
  if (part < first / kPart || part > position / kPart) return s;
  s.valid = true;
  s.row_head = (tile.first_row + s.t) * params.heads + chunk.first + s.h;
  s.jrel = part - first / kPart;
  s.lo = static_cast<int>(max(base, first) - base);
  s.hi = static_cast<int>(min(base + kPart - 1, position) - base);
  return s;
}

// The partition's rows of the key or value cache at positions key_lo..key_hi (the tile's span, or one slot's
// window), columns column0 .. column0 + width - 1 (8-aligned), copied (cp.async, one group) into rows of
// `stride` bf16, zeros for the partition's other positions and past head_dim.
__device__ void copy_cache(const Params& params, const TileRows& tile, const uint16_t* cache, int64_t part,
                           int column0, int width, int stride, int kv_head, uint16_t* staged, int64_t key_lo,
                           int64_t key_hi) {
  const int pieces = width / 8;
  const int64_t lo = max(part * kPart, key_lo), hi = min(part * kPart + kPart - 1, key_hi);
  // The partition's slots: (base + jj) % capacity, one division for the partition instead of one a copy.
  const int64_t capacity = tile.segment.capacity, base = part * kPart % capacity;
  for (int i = static_cast<int>(threadIdx.x); i < kPart * pieces; i += kThreads) {
    const int jj = i / pieces, c = i % pieces * 8;
    const int64_t position = part * kPart + jj;
    const bool present = position >= lo && position <= hi && column0 + c < params.head_dim;
    int64_t slot = base + jj;  // below 2 * capacity when the cache holds a partition
    slot = capacity < kPart ? position % capacity : slot < capacity ? slot : slot - capacity;
    const uint16_t* row = cache + (slot * params.kv_heads + kv_head) * static_cast<int64_t>(params.head_dim);
    copy16(staged + jj * stride + c, present ? row + column0 + c : cache, present);
  }
  copy_commit();
}

// Once copy_cache's group is in: true in a thread that copied a value that is not finite (each thread reads
// back only the pieces it copied, which need no barrier).
__device__ bool copied_non_finite(const uint16_t* staged, int width, int stride) {
  const int pieces = width / 8;
  uint32_t exponents = 0;  // the OR of each staged pair's exponent bits where both are all ones
  for (int i = static_cast<int>(threadIdx.x); i < kPart * pieces; i += kThreads) {
    const uint4 eight = *reinterpret_cast<const uint4*>(staged + i / pieces * stride + i % pieces * 8);
    for (const uint32_t pair : {eight.x, eight.y, eight.z, eight.w})
      exponents |= ((pair & 0x7f80u) == 0x7f80u) | ((pair & 0x7f800000u) == 0x7f800000u);
  }
  return exponents != 0;
}

// The block's slots of partition `part` (slot_at), a thread a slot; with their m and l where `norms`.
__device__ void place_slots(const Params& params, const TileRows& tile, const HeadChunk& chunk, int64_t part,
                            Slot* slots, float2* norms) {
  if (threadIdx.x >= kSlots) return;
  const Slot s = slot_at(params, tile, chunk, static_cast<int>(threadIdx.x), part);
  slots[threadIdx.x] = s;
  if (norms != nullptr && s.valid) norms[threadIdx.x] = params.norms[s.row_head];
}

// One block per (partition of the walk, kv head and chunk of its heads, tile): the slots' query rows staged
// once, each partition's keys staged, a warp's tensor-core dots per 16 keys for all slots, then the slots'
// (max, sum exp) (partition_stats). The first partition's keys are copied with the queries, one wait for
// both.
__global__ void __launch_bounds__(kThreads) score_tile_kernel(Params params) {
  static_assert(kSlots == kWarps * kScoreSlots, "each warp's query vectors are the rows of one mma tile");
  wait_for_previous_kernel();
  extern __shared__ float4 dynamic_shared[];
  const int dim = params.head_dim, stride = dot_stride(dim);
  uint16_t* queries = reinterpret_cast<uint16_t*>(dynamic_shared);  // [kSlots][stride]
  uint16_t* keys = queries + kSlots * stride;                       // [kPart][stride]
  // The scores take the keys' place once every warp's dots are done (a third block an SM fits).
  float(&scores)[kSlots][kScoreStride] = *reinterpret_cast<float(*)[kSlots][kScoreStride]>(keys);
  __shared__ int lo[kSlots], hi[kSlots];
  __shared__ float2 stats[kSlots];
  __shared__ Slot slots[kSlots];
  __shared__ TileRows tile;
  static_assert(
      sizeof(lo) + sizeof(hi) + sizeof(stats) + sizeof(slots) + sizeof(TileRows) <= kStaticTileBytes,
      "kStaticTileBytes covers a score tile's static shared memory");
  // A block past its tile's walk returns before copying anything (no copy may outlive its block).
  if (!load_tile(params, tile) || tile.part_lo + blockIdx.x > tile.part_hi) return;
  const HeadChunk chunk = head_chunk(params, blockIdx.y, params.tile_heads);
  const int slot_count = tile.rows * params.tile_heads;
  copy_dot_rows(queries, kSlots, dim, params.q, [&](int slot) -> const uint16_t* {
    const int t = slot / params.tile_heads, h = slot % params.tile_heads;
    if (slot >= slot_count || h >= chunk.count) return nullptr;
    return params.q + (tile.first_row + t) * params.q_stride + static_cast<int64_t>(chunk.first + h) * dim;
  });
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t part = tile.part_lo + blockIdx.x; part <= tile.part_hi; part += gridDim.x) {
    __syncthreads();  // the last partition's keys, scores and slots are used
    copy_cache(params, tile, tile.segment.keys, part, 0, dim, stride, chunk.kv_head, keys, tile.key_lo,
               tile.key_hi);  // any key values
    place_slots(params, tile, chunk, part, slots, nullptr);
    if (threadIdx.x < kSlots) {
      const Slot& s = slots[threadIdx.x];
      lo[threadIdx.x] = s.valid ? s.lo : 1;  // 1..0: no entries
      hi[threadIdx.x] = s.valid ? s.hi : 0;
    }
    copy_wait<0>();
    __syncthreads();
    // The warp's kScoreSlots query vectors against all the partition's keys.
    float dots[2 * kPart / 16][4];
    partition_dots<kPart / 16>(queries + warp * kScoreSlots * stride, keys, dim, 0, dots);
    __syncthreads();  // every warp's dots are in: the scores may overwrite the keys
    each_fragment_element<1, 2 * kPart / 16>([&](int, int nt, int e) {
      const int slot = warp * kScoreSlots + fragment_row(lane, e), jj = nt * 8 + fragment_col(lane, e);
      const Slot& s = slots[slot];
      if (!s.valid || jj < s.lo || jj > s.hi) return;
      const float value = params.scale * dots[nt][e];
      scores[slot][jj] = value;
      params.scores[(s.row_head * params.span + s.jrel) * kPart + jj] = value;
    });
    partition_stats<kSlots>(scores, slot_count, lo, hi, stats);
    if (threadIdx.x < slot_count && slots[threadIdx.x].valid)
      params.stats[slots[threadIdx.x].row_head * params.span + slots[threadIdx.x].jrel] = stats[threadIdx.x];
  }
}

// The warp's kScoreSlots slots' partial sums of the partition over the block's columns, 32 at a time (only
// slot `only`, or all with -1): partition_values of the staged weights and values.
__device__ void write_partials(const Params& params, const Slot* slots, const uint16_t* weights,
                               const uint16_t* values, int column0, int only) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (only >= 0 && warp != only / kScoreSlots) return;  // another warp's slot
  for (int col0 = 0; col0 < kColumns; col0 += 32) {
    float acc[4][4];
    partition_values(weights + warp * kScoreSlots * kWeightStride, values, col0, acc);
    each_fragment_element<1, 4>([&](int, int nt, int e) {
      const int k = warp * kScoreSlots + fragment_row(lane, e);
      const int d = column0 + col0 + nt * 8 + fragment_col(lane, e);
      if ((only >= 0 && k != only) || d >= params.head_dim) return;
      const Slot& s = slots[k];
      if (s.valid) params.partial[(s.row_head * params.span + s.jrel) * params.head_dim + d] = acc[nt][e];
    });
  }
}

// Split rows' partial sums: one block per (partition of the walk, kv head, chunk of heads and strip of
// columns, tile); the slots' weights and the partition's values staged as bf16, then tensor-core sums. The
// values are copied while the weights are made. Six blocks an SM (79 registers, 31 KiB of shared memory).
__global__ void __launch_bounds__(kThreads, 6) values_tile_kernel(Params params) {
  wait_for_previous_kernel();
  __shared__ __align__(16) uint16_t weights[kSlots * kWeightStride];
  __shared__ __align__(16) uint16_t values[kPart * kValueStride];
  __shared__ Slot slots[kSlots];
  __shared__ float2 norms[kSlots];
  __shared__ TileRows tile;
  static_assert(
      sizeof(weights) + sizeof(values) + sizeof(slots) + sizeof(norms) + sizeof(TileRows) <= 32 << 10,
      "six values tiles fit an SM's shared memory");
  if (!load_tile(params, tile)) return;
  const HeadChunk chunk =
      head_chunk(params, static_cast<int>(blockIdx.y) / params.column_chunks, params.tile_heads);
  const int column0 = static_cast<int>(blockIdx.y) % params.column_chunks * kColumns;
  const auto stage_values = [&](int64_t part, int64_t key_lo, int64_t key_hi) {
    copy_cache(params, tile, tile.segment.values, part, column0, kColumns, kValueStride, chunk.kv_head,
               values, key_lo, key_hi);
  };
  for (int64_t part = tile.part_lo + blockIdx.x; part <= tile.part_hi; part += gridDim.x) {
    __syncthreads();  // the last partition's weights, values and slots are used
    stage_values(part, tile.key_lo, tile.key_hi);
    place_slots(params, tile, chunk, part, slots, norms);
    __syncthreads();
    constexpr int kPerThread = kSlots * kPart / kThreads;
#pragma unroll 8
    for (int n = 0; n < kPerThread; ++n) {
      const int i = n * kThreads + static_cast<int>(threadIdx.x), k = i / kPart, jj = i % kPart;
      const Slot& s = slots[k];
      uint16_t bits = 0;
      if (s.valid && jj >= s.lo && jj <= s.hi)
        bits = bf16_bits(expf(params.scores[(s.row_head * params.span + s.jrel) * kPart + jj] - norms[k].x) /
                         norms[k].y);
      weights[k * kWeightStride + jj] = bits;
    }
    copy_wait<0>();
    if (__syncthreads_or(copied_non_finite(values, kColumns, kValueStride)) == 0) {
      write_partials(params, slots, weights, values, column0, -1);
      continue;
    }
    // A staged value is not finite: a slot that does not see its key would take 0 x inf where the decode
    // kernel stages a zero, so each slot multiplies the values staged again with only the keys it sees.
    for (int k = 0; k < kSlots; ++k) {
      const Slot& s = slots[k];
      if (!s.valid) continue;  // the same for the whole block
      __syncthreads();         // the last slot's values are used
      stage_values(part, part * kPart + s.lo, part * kPart + s.hi);
      copy_wait<0>();
      __syncthreads();
      write_partials(params, slots, weights, values, column0, k);
    }
  }
}

// Blocks of the walk per tile: the partitions of a row and one more, which a tile of consecutive positions
// can reach; a block walks on by gridDim.x for rows that reach further.
unsigned walk_blocks(const Params& params) {
  return static_cast<unsigned>(params.span + 1);
}

// score_tile_kernel's dynamic shared memory: the slots' query rows and a partition's key rows, as dots stage
// them, where the scores then go (at least their bytes).
size_t tile_score_bytes(const Params& params) {
  const size_t row = dot_stride(params.head_dim) * sizeof(uint16_t);
  return kSlots * row + std::max(kPart * row, sizeof(float) * kSlots * kScoreStride);
}

}  // namespace

bool tiles_fit(const Params& params, size_t shared_optin) {
  return params.rows_vector && params.q_vector && params.head_dim % kDotStep == 0 &&
         tile_score_bytes(params) + kStaticTileBytes <= shared_optin;
}

cudaError_t launch_score_tiles(const Params& params, cudaStream_t stream) {
  const size_t shared = tile_score_bytes(params);
  if (shared + kStaticTileBytes > size_t{48} << 10) {
    const cudaError_t code = cudaFuncSetAttribute(
        score_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (code != cudaSuccess) return code;
  }
  const dim3 grid(walk_blocks(params), static_cast<unsigned>(params.kv_heads * params.head_chunks),
                  static_cast<unsigned>(params.tiles));
  launch_dependent(score_tile_kernel, grid, kThreads, shared, stream, params);
  return cudaGetLastError();
}

cudaError_t launch_value_tiles(const Params& params, cudaStream_t stream) {
  const dim3 grid(walk_blocks(params),
                  static_cast<unsigned>(params.kv_heads * params.head_chunks * params.column_chunks),
                  static_cast<unsigned>(params.tiles));
  launch_dependent(values_tile_kernel, grid, kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace attention

}  // namespace plumb::cuda
