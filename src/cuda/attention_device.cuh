#pragma once
// The attention kernels' pieces (k_attention.cu): launch parameters, a row's keys and partitions, the blocks'
// query heads, the scores' tensor-core dots, the values blocks' staging and sums, and warp steps that give
// the bits of a plain loop in order.
#include <cstddef>
#include <cstdint>

#include "cuda/bf16.cuh"
#include "cuda/kv_segments.cuh"
#include "cuda/mma.cuh"

namespace plumb::cuda::attention {

constexpr int kPart = 64;
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kDotStep = 16;        // the mma's k: dots run over the head dimension rounded up to this
constexpr int kScoreSlots = 16;     // query vectors a score block dots with each key (the mma's 16 rows)
constexpr int kColumns = kThreads;  // output columns per values block, one per thread
constexpr int kWeightStride = kPart + 8;    // bf16 a staged weight row (rows 16 bytes apart in the banks)
constexpr int kValueStride = kColumns + 8;  // bf16 a staged value row
constexpr int kMaxGroup = 128;
constexpr int kWholeSpan = 8;  // rows spanning up to this many partitions walk them in one values block
// Streams a launch takes at once: 32-stream decode in one launch of each kernel instead of two.
constexpr int kMaxSegments = 32;
// Query vectors (rows x heads of one kv group) per block of k_attention_tiles.cu: an mma tile of kScoreSlots
// a warp, so that each staged partition serves four warps' rows.
constexpr int kSlots = kWarps * kScoreSlots;
constexpr int64_t kMaxChunkRows = 65535;
// Prompt chunks take up to this much scratch: 2048 rows of a sliding layer (span 17) in one chunk instead of
// three (the kernel bench's sliding and global prompt layers 6% and 7% faster than at 256 MiB).
constexpr size_t kScratchCap = size_t{1} << 30;
static_assert(kWarps * 16 == kPart, "each warp of a score block dots 16 keys of the partition");
static_assert(kColumns == kThreads, "a values block stages one column per thread");
static_assert(kWarps * 32 == kColumns, "each warp of a values block multiplies 32 columns");

struct SegmentEntry {
  int64_t first_row;  // relative to the chunk
  int64_t rows;
  const uint16_t* keys;
  const uint16_t* values;
  int64_t capacity;
};

struct Params {
  const uint16_t* q;
  int64_t q_stride;
  const int32_t* positions;
  uint16_t* out;
  int64_t out_stride;
  int64_t rows;
  int heads, kv_heads, group, head_dim;
  int64_t window;
  float scale;
  int span;
  int head_chunks;    // blocks per kv head's query group in the kernel being launched
  int column_chunks;  // values and merge blocks per head: head_dim / kColumns rounded up
  bool whole;         // values blocks walk all their row's partitions and write out themselves
  bool rows_vector;   // key and value rows start 16-byte aligned and head_dim % 8 == 0
  bool q_vector;      // query rows too
  float2* stats;      // [rows, heads, span]: (max, sum exp(s - max)) per partition
  float2* norms;      // [rows, heads]: (m, l) of split rows
  float* scores;      // [rows, heads, span, kPart]: scale * (q · k) per visible key
  float* partial;     // [rows, heads, span, head_dim]: sum p_j v_j per partition (split only)
  uint16_t* weights;  // [rows, heads, span, kPart]: p_j as bf16, zeros for keys not seen (split tiles only)
  int segment_count;
  SegmentEntry segments[kMaxSegments];
  // k_attention_tiles.cu: tiles of tile_rows rows (none crossing a segment) times tile_heads heads.
  int tile_rows, tile_heads;
  int64_t tiles;
};
static_assert(sizeof(Params) <= 4096, "the attention kernels' parameters exceed 4 KiB");

struct RowKeys {
  SegmentEntry segment;
  int64_t position;
  int64_t first;  // the row's first visible key position
  int64_t parts;  // partitions from first / kPart to position / kPart
};

__device__ inline RowKeys row_keys(const Params& params, int64_t r) {
  RowKeys row;
  row.segment = segment_of_row(params.segments, params.segment_count, r);
  row.position = params.positions[r];
  row.first = params.window > 0 ? max(int64_t{0}, row.position - params.window + 1) : 0;
  row.parts = row.position / kPart - row.first / kPart + 1;
  return row;
}

// Partition jrel of a row: positions base .. base + kPart - 1, of which lo .. hi are visible.
struct Window {
  int64_t base, lo, hi;
  __device__ bool visible(int64_t position) const { return position >= lo && position <= hi; }
};

__device__ inline Window window_of(const RowKeys& row, int64_t jrel) {
  Window w;
  w.base = (row.first / kPart + jrel) * kPart;
  w.lo = max(w.base, row.first);
  w.hi = min(w.base + kPart - 1, row.position);
  return w;
}

// The block's query heads: `count` heads of kv head `kv_head`'s group from absolute head `first`.
struct HeadChunk {
  int kv_head, first, count;
};

__device__ inline HeadChunk head_chunk(const Params& params, int index, int per_block) {
  HeadChunk chunk;
  chunk.kv_head = index / params.head_chunks;
  const int in_group = index % params.head_chunks * per_block;
  chunk.first = chunk.kv_head * params.group + in_group;
  chunk.count = min(per_block, params.group - in_group);
  return chunk;
}

// The partition's p_j = bf16(exp(s_j - m) / l) for the chunk's heads as bf16 rows of kWeightStride, from the
// scores staged as [kScoreSlots][kPart] (copy_scores); zeros for keys a head does not see. Rows past the
// chunk's heads stay as zero_weight_rows left them.
__device__ __forceinline__ void stage_weights(const float* scores, const Window& w, int count,
                                              const float* top, const float* total, uint16_t* weights) {
  for (int i = static_cast<int>(threadIdx.x); i < count * kPart; i += kThreads) {
    const int h = i / kPart, jj = i % kPart;
    uint16_t bits = 0;
    if (w.visible(w.base + jj)) bits = bf16_bits(expf(scores[i] - top[h]) / total[h]);
    weights[h * kWeightStride + jj] = bits;
  }
}

// The weight rows past the chunk's heads (up to kScoreSlots, the mma tile's rows) as zeros, once a block.
__device__ __forceinline__ void zero_weight_rows(int count, uint16_t* weights) {
  for (int i = static_cast<int>(threadIdx.x); i < (kScoreSlots - count) * kPart; i += kThreads)
    weights[(count + i / kPart) * kWeightStride + i % kPart] = 0;
}

// Copies (cp.async) the partition's stored scores of the chunk's first H heads into [kScoreSlots][kPart]:
// only the entries stage_weights reads.
template <int H>
__device__ __forceinline__ void copy_scores(const Params& params, int64_t head0, int64_t jrel,
                                            const Window& w, int count, float* staged) {
  for (int i = static_cast<int>(threadIdx.x); i < H * kPart; i += kThreads) {
    const int h = i / kPart, jj = i % kPart;
    const bool seen = h < count && w.visible(w.base + jj);
    copy4(staged + i, params.scores + (seen ? ((head0 + h) * params.span + jrel) * kPart + jj : 0), seen);
  }
}

// The slot of absolute position `position` in a cache of `capacity` rows, position % capacity: none where
// position < capacity, else in 32 bits (positions are int32, so then both are below 2^31 + kPart).
__device__ __forceinline__ int64_t ring_slot(int64_t position, int64_t capacity) {
  if (position < capacity) return position;
  return static_cast<uint32_t>(position) % static_cast<uint32_t>(capacity);
}

// Key jj's row of the partition in `cache` (the row's keys or values): its slot (base + jj) % capacity, with
// one division for the partition instead of one a key.
__device__ __forceinline__ auto partition_rows(const Params& params, const RowKeys& row,
                                               const uint16_t* cache, int kv_head, const Window& w) {
  const int64_t capacity = row.segment.capacity, first_slot = ring_slot(w.base, capacity);
  return [=, &params](int jj) {
    int64_t slot = first_slot + jj;  // below 2 * capacity when the cache holds a partition
    slot = capacity < kPart ? ring_slot(w.base + jj, capacity) : slot < capacity ? slot : slot - capacity;
    return cache + (slot * params.kv_heads + kv_head) * static_cast<int64_t>(params.head_dim);
  };
}

// Key jj's value row of the partition from column column0.
__device__ __forceinline__ auto value_rows(const Params& params, const RowKeys& row, int kv_head,
                                           const Window& w, int column0) {
  const auto rows = partition_rows(params, row, row.segment.values, kv_head, w);
  return [=](int jj) { return rows(jj) + column0; };
}

// The partition's value rows, columns column0 .. column0 + kColumns - 1, into rows of kValueStride, an
// element a thread (rows of any alignment): zeros for keys the row does not see and past head_dim, so that
// their zero weights multiply zeros.
__device__ __forceinline__ void stage_values(const Params& params, const RowKeys& row, int kv_head,
                                             const Window& w, int column0, uint16_t* values) {
  const auto value_row = value_rows(params, row, kv_head, w, column0);
  const int c = static_cast<int>(threadIdx.x);  // kColumns == kThreads
#pragma unroll 8
  for (int jj = 0; jj < kPart; ++jj)
    values[jj * kValueStride + c] =
        w.visible(w.base + jj) && column0 + c < params.head_dim ? value_row(jj)[c] : uint16_t{0};
}

// The same rows and zeros for 16-byte aligned rows with head_dim % 8 == 0, as cp.async copies.
__device__ __forceinline__ void copy_values(const Params& params, const RowKeys& row, int kv_head,
                                            const Window& w, int column0, uint16_t* values) {
  const auto value_row = value_rows(params, row, kv_head, w, column0);
  constexpr int kPieces = kColumns / 8;
  for (int i = static_cast<int>(threadIdx.x); i < kPart * kPieces; i += kThreads) {
    const int jj = i / kPieces, c = i % kPieces * 8;
    const bool seen = w.visible(w.base + jj) && column0 + c < params.head_dim;
    copy16(values + jj * kValueStride + c, seen ? value_row(jj) + c : row.segment.values, seen);
  }
}

// bf16 a staged value row of one column strip, as partition_values reads it.
constexpr int kStripElements = kPart * kValueStride;

// A staged query or key row (partition_dots_staged): rows 16 bytes apart in the banks, as ldmatrix reads 8 of
// them at once.
__host__ __device__ constexpr int staged_stride(int head_dim) {
  return head_dim + 8;
}

// The shared memory of a block's staged query rows [heads][staged_stride] and keys [kPart][staged_stride].
constexpr size_t staged_rows_bytes(int heads, int head_dim) {
  return size_t(heads + kPart) * staged_stride(head_dim) * sizeof(uint16_t);
}

// The chunk's query rows into [count][staged_stride], 16 bytes a copy (q_vector).
__device__ __forceinline__ void copy_query_rows(const Params& params, int64_t r, const HeadChunk& chunk,
                                                uint16_t* queries) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int dim = params.head_dim, stride = staged_stride(dim);
  const uint16_t* q = params.q + r * params.q_stride + static_cast<int64_t>(chunk.first) * dim;
  for (int h = warp; h < chunk.count; h += kWarps)
    for (int c = lane * 8; c < dim; c += 256) copy16(queries + h * stride + c, q + h * dim + c, true);
}

// The partition's keys into [kPart][staged_stride] and, where `values` is not null, its value strips
// (copy_values' layout and zeros), 16 bytes a copy (rows_vector), zeros for keys the row does not see, with
// one slot computation a key: a warp takes every kWarps-th key, its lanes the key's pieces.
__device__ __forceinline__ void copy_key_rows(const Params& params, const RowKeys& row, int kv_head,
                                              const Window& w, uint16_t* keys, uint16_t* values) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int dim = params.head_dim, stride = staged_stride(dim);
  const int width = values != nullptr ? params.column_chunks * kColumns : dim;  // value strips to the end
  const auto key_rows = partition_rows(params, row, row.segment.keys, kv_head, w);
  for (int jj = warp; jj < kPart; jj += kWarps) {
    const bool seen = w.visible(w.base + jj);
    const int64_t offset = seen ? key_rows(jj) - row.segment.keys : 0;  // the slot's row, keys and values
    for (int c = lane * 8; c < width; c += 256) {
      const bool inside = c < dim;
      if (inside) copy16(keys + jj * stride + c, row.segment.keys + offset + c, seen);
      if (values != nullptr)
        copy16(values + c / kColumns * kStripElements + jj * kValueStride + c % kColumns,
               row.segment.values + (inside ? offset + c : 0), seen && inside);
    }
  }
}

// acc[nt][e] = sum_j p_j v_j over the partition's kPart keys for slot fragment_row(lane, e) and column col0 +
// 8 nt + fragment_col(lane, e) (32 columns a warp): mma.sync m16n8k16 steps over the keys in position order
// from zero, the weights and values staged as bf16 (stage_weights, stage_values). A warp's call.
template <int kStride = kValueStride>
__device__ __forceinline__ void partition_values(const uint16_t* weights, const uint16_t* values, int col0,
                                                 float (&acc)[4][4]) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t a_row = shared_address(weights + (lane % 16) * kWeightStride + (lane / 16) * 8);
  const uint32_t b_row =
      shared_address(values + (lane / 8 % 2 * 8 + lane % 8) * kStride + col0 + lane / 16 * 8);
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
#pragma unroll
  for (int k = 0; k < kPart; k += 16) {
    uint32_t a[4];
    ldmatrix_x4_at(a, a_row + k * 2);
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      uint32_t b[4];
      ldmatrix_x4_trans_at(b, b_row + (k * kStride + pair * 16) * 2);
      mma_bf16(acc[2 * pair], a, b[0], b[1]);
      mma_bf16(acc[2 * pair + 1], a, b[2], b[3]);
    }
  }
}

constexpr unsigned kFullMask = 0xffffffffu;

// The dots' k16 steps run over the head dimension rounded up to kDotStep (zeros past head_dim).
__host__ __device__ constexpr int dot_width(int dim) {
  return (dim + kDotStep - 1) / kDotStep * kDotStep;
}

// Elements d and d + 1 of a bf16 row as one mma operand register (d in the low half), zeros past dim or for
// a row of zeros (nullptr). aligned: dim % 8 == 0 and the row 4-byte aligned, so one 32-bit load.
__device__ __forceinline__ uint32_t bf16_pair(const uint16_t* row, int d, int dim, bool aligned) {
  if (row == nullptr || d >= dim) return 0u;
  if (aligned) return *reinterpret_cast<const uint32_t*>(row + d);
  const uint32_t high = d + 1 < dim ? row[d + 1] : uint16_t{0};
  return row[d] | high << 16;
}

// dots[nt][e] = q_slot · k_key for 16 query slots and 16 keys: mma.sync m16n8k16 steps over the head
// dimension in ascending order from zero, the matmul's k16 sums (products past head_dim are zeros), with the
// fragments read straight from the rows. The lane's rows: query slots lane / 4 and lane / 4 + 8, keys
// key0 + lane / 4 and key0 + 8 + lane / 4 (nullptr: a row of zeros). The prompt tiles' score walk makes the
// same steps from staged rows with ldmatrix (the same values, so the same dots), and so do the decode
// kernels where staged_rows_fit (partition_dots_staged: a k16 step in 4 instructions instead of about 50);
// this reads rows of other alignments and head dims, and every row with PLUMB_CUDA_ATTENTION_STAGED_DOTS=0.
__device__ __forceinline__ void partition_dots_direct(const uint16_t* q_low, const uint16_t* q_high,
                                                      bool queries_aligned, const uint16_t* key_low,
                                                      const uint16_t* key_high, bool keys_aligned, int dim,
                                                      float (&dots)[2][4]) {
  const int pair = static_cast<int>(threadIdx.x % 4) * 2;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dots[nt][e] = 0.0f;
#pragma unroll 8
  for (int k = 0; k < dot_width(dim); k += kDotStep) {
    const int d = k + pair;
    const uint32_t a[4] = {
        bf16_pair(q_low, d, dim, queries_aligned), bf16_pair(q_high, d, dim, queries_aligned),
        bf16_pair(q_low, d + 8, dim, queries_aligned), bf16_pair(q_high, d + 8, dim, queries_aligned)};
    mma_bf16(dots[0], a, bf16_pair(key_low, d, dim, keys_aligned),
             bf16_pair(key_low, d + 8, dim, keys_aligned));
    mma_bf16(dots[1], a, bf16_pair(key_high, d, dim, keys_aligned),
             bf16_pair(key_high, d + 8, dim, keys_aligned));
  }
}

// partition_dots_direct's dots from staged rows (rows `stride` elements apart, 16-byte aligned, head_dim a
// multiple of kDotStep): query slots [count][stride] (slots past count read slot 0's row, whose dots nobody
// reads) and the warp's 16 keys [16][stride], each k16 step's fragments by ldmatrix: the same operand
// registers into the same mma steps, so the same dots, in 4 instructions a step instead of about 50.
__device__ __forceinline__ void partition_dots_staged(const uint16_t* queries, int count,
                                                      const uint16_t* keys, int stride, int dim,
                                                      float (&dots)[2][4]) {
  const int lane = static_cast<int>(threadIdx.x % 32), slot = lane % 16 < count ? lane % 16 : 0;
  const uint32_t a_row = shared_address(queries + slot * stride + lane / 16 * 8);
  const uint32_t b_row = shared_address(keys + (lane / 16 * 8 + lane % 8) * stride + lane / 8 % 2 * 8);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dots[nt][e] = 0.0f;
#pragma unroll 4
  for (int k = 0; k < dim; k += kDotStep) {
    uint32_t a[4], b[4];
    ldmatrix_x4_at(a, a_row + k * 2);
    ldmatrix_x4_at(b, b_row + k * 2);
    mma_bf16(dots[0], a, b[0], b[1]);
    mma_bf16(dots[1], a, b[2], b[3]);
  }
}

// partition_dots_direct for the chunk's query rows of row r and the warp's 16 keys of the partition (query
// slots past the chunk's heads and keys the row does not see: rows of zeros); kVector: 16-byte cache rows.
template <bool kVector>
__device__ __forceinline__ void chunk_dots_direct(const Params& params, const RowKeys& row, int64_t r,
                                                  const HeadChunk& chunk, const Window& w, int dim, int warp,
                                                  int lane, float (&dots)[2][4]) {
  const uint16_t* q = params.q + r * params.q_stride + static_cast<int64_t>(chunk.first) * dim;
  const auto query_row = [&](int h) { return h < chunk.count ? q + static_cast<int64_t>(h) * dim : nullptr; };
  const auto keys = partition_rows(params, row, row.segment.keys, chunk.kv_head, w);
  const auto key_row = [&](int jj) { return w.visible(w.base + jj) ? keys(jj) : nullptr; };
  partition_dots_direct(query_row(lane / 4), query_row(lane / 4 + 8), params.q_vector,
                        key_row(warp * 16 + lane / 4), key_row(warp * 16 + 8 + lane / 4), kVector, dim, dots);
}

// The loop `top = -inf; for k: top = top < x_k ? x_k : top`. That loop ends on the earliest x_k of the
// largest value (never a NaN; of +0 and -0 the earlier), and so does this: each thread scans a contiguous run
// with the same step, then runs are joined left to right, the right run winning only when strictly greater.
template <typename Value>
__device__ float ordered_max(const Value& value, int n) {
  const int lane = static_cast<int>(threadIdx.x % 32), run = (n + 31) / 32;
  float top = -INFINITY;
  for (int k = lane * run; k < min(n, (lane + 1) * run); ++k) {
    const float x = value(k);
    top = top < x ? x : top;
  }
  for (int offset = 1; offset < 32; offset *= 2) {
    const float right = __shfl_down_sync(kFullMask, top, offset);
    if (lane % (2 * offset) == 0) top = top < right ? right : top;
  }
  return __shfl_sync(kFullMask, top, 0);
}

// The loop `total = 0; for k: total = total + t_k`: the threads make 32 terms at a time and every thread
// adds them in order.
template <typename Term>
__device__ float ordered_sum(const Term& term, int n) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  float total = 0.0f;
  for (int k0 = 0; k0 < n; k0 += 32) {
    const float t = k0 + lane < n ? term(k0 + lane) : 0.0f;
    const int count = min(32, n - k0);
    for (int i = 0; i < count; ++i) total = total + __shfl_sync(kFullMask, t, i);
  }
  return total;
}

// Score rows in shared memory: a partition's kPart scores and one more float, so that a thread a row reads
// its row's entries from distinct banks.
constexpr int kScoreStride = kPart + 1;

// Each of `count` score rows' (max, sum exp(s - max)) over its entries lo[r]..hi[r] (none where lo > hi), as
// the loops `top = top < s_k ? s_k : top` from -inf and `total = total + exp(s_k - top)` from 0 over k in
// order make them (the bits of ordered_max and ordered_sum): a thread a row for the max and the sum (eight
// entries' reads in flight), the block for the exponentials, which replace the row's entries. count <=
// kThreads; every thread calls it.
template <int kRows>
__device__ void partition_stats(float (&rows)[kRows][kScoreStride], int count, const int* lo, const int* hi,
                                float2* stats) {
  const int t = static_cast<int>(threadIdx.x);
  __syncthreads();  // the rows, lo and hi are in
  if (t < count) {
    float top = -INFINITY;
#pragma unroll 8
    for (int k = lo[t]; k <= hi[t]; ++k) top = top < rows[t][k] ? rows[t][k] : top;
    stats[t].x = top;
  }
  __syncthreads();
  for (int i = t; i < count * kPart; i += kThreads) {
    const int r = i / kPart, k = i % kPart;
    if (k >= lo[r] && k <= hi[r]) rows[r][k] = expf(rows[r][k] - stats[r].x);
  }
  __syncthreads();
  if (t < count) {
    float total = 0.0f;
#pragma unroll 8
    for (int k = lo[t]; k <= hi[t]; ++k) total = total + rows[t][k];
    stats[t].y = total;
  }
  __syncthreads();
}

// k_attention_tiles.cu and k_attention_walk.cu: whether a chunk's rows may take the tiled kernels (vector
// rows, head_dim a multiple of 16, the blocks' shared memory within the device's), and the launches that
// write the same scores and stats as score_kernel and, for split rows, from normalize_kernel's weights, the
// same outputs as values_kernel's partials added in order by merge_kernel.
bool tiles_fit(const Params& params, size_t shared_optin);

// Prompt-sized chunks (at least this many rows per segment on average) of groups up to kSlots heads take
// the tiled kernels where they fit: a tile of kSlots / group rows times the group's heads.
constexpr int64_t kTileMinRows = 8;
constexpr int kTileMaxGroup = kSlots;

struct DeviceLimits {
  int64_t blocks_wanted;  // enough blocks to fill every multiprocessor twice
  size_t shared_optin;    // dynamic shared memory a block may ask for
};

// k_attention.cu: whether a chunk's rows take the tiled kernels, and a chunk's launches (its scratch placed,
// attention_launch.cu).
bool chunk_tiled(const Params& params, const DeviceLimits& limits);
cudaError_t run_chunk(Params params, bool tiled, const DeviceLimits& limits, cudaStream_t stream);
cudaError_t launch_score_tiles(const Params& params, cudaStream_t stream);
// k_attention_cluster.cu: whether a call's whole rows take one launch of clusters (sm_90, up to 8 rows), and
// that launch with `heads` query heads a block.
bool clusters_take(const Params& params);
// Whether the decode kernels may stage query rows and keys (partition_dots_staged): 16-byte rows, head_dim a
// multiple of kDotStep, PLUMB_CUDA_ATTENTION_STAGED_DOTS not 0.
bool staged_rows_fit(const Params& params);
cudaError_t launch_whole_clusters(Params params, int heads, cudaStream_t stream);
cudaError_t launch_value_walk(const Params& params, cudaStream_t stream);

}  // namespace plumb::cuda::attention
