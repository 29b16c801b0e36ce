// Scores for many query rows of a stream at once (prompts): k_attention.cu's score_kernel's scores and
// (max, sum exp) bit for bit (s_j = scale * (q · k_j) as partition_dots_direct's mma k16 steps over the head
// dimension in ascending order from zero; a partition's max as the loop `top = top < s_j ? s_j : top` and its
// sum as `total = total + exp(s_j - top)` over its keys in order), with a block serving kSlots query vectors
// (a tile of rows times the heads of one kv group, kScoreSlots a warp) so that each key is staged once for
// all of them. A block walks kWalkParts partitions of its tile through kStages cp.async stages, each holding
// kDimChunk columns of the slots' queries and of the partition's keys: the next stage copies while one
// multiplies. Tiles never cross a segment; each row keeps its own window within the partitions.
#include <algorithm>

#include "cuda/attention_tiles.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"
#include "cuda/wgmma.cuh"

namespace plumb::cuda {

namespace attention {

namespace {

constexpr int kWalkParts = 2;  // partitions of a tile a score block walks, its queries re-read for each

// The block's partitions: groups of kWalkParts consecutive partitions of its tile, the groups blockIdx.x,
// blockIdx.x + gridDim.x, ...; n counts the block's partitions in order.
struct PartWalk {
  int64_t part_lo, part_hi;
  __device__ int64_t part(int n) const {
    return part_lo + (blockIdx.x + int64_t{n / kWalkParts} * gridDim.x) * kWalkParts + n % kWalkParts;
  }
  __device__ int count() const {
    const int64_t total = part_hi - part_lo + 1;
    int n = 0;
    for (int64_t g = blockIdx.x; g * kWalkParts < total; g += gridDim.x)
      n += static_cast<int>(min(int64_t{kWalkParts}, total - g * kWalkParts));
    return n;
  }
};

// A score stage: kSlots query rows, then kPart key rows, each kDimChunk bf16 (128 bytes) in the 128-byte
// swizzle (SwizzledRows), 1024-byte aligned as wgmma's descriptors need.
constexpr int kScoreStageElements = (kSlots + kPart) * kDimChunk;
constexpr size_t kScoreShared = size_t{kStages} * kScoreStageElements * sizeof(uint16_t) + 1024;

static_assert(kDimChunk == 4 * kDotStep, "add_stage_dots takes a stage in up to four k16 steps");

#if PLUMB_WGMMA
// kSteps k16 wgmma steps of the stage's queries by its keys, waited for.
template <int kSteps>
__device__ __forceinline__ void stage_steps(uint64_t queries, uint64_t keys,
                                            float (&acc)[2 * kPart / 16][4]) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk)
    wgmma_m64n64k16(acc, wgmma_step(queries, kk), wgmma_step(keys, kk), true);
  wgmma_commit();
  wgmma_wait<0>();
}
#endif

// acc[nt][e] += q_slot · k_key over the stage's `width` columns for the warp's kScoreSlots slots and the
// partition's kPart keys (key 8 nt + fragment_col(lane, e), slot fragment_row(lane, e)):
// partition_dots_direct's mma k16 steps, continued across stages. On sm_90a the block's warpgroup takes them
// as wgmma m64n64k16 steps (the same bits as the mma.sync chain, CudaWgmma), waited for here; elsewhere each
// warp's mma.sync steps.
__device__ __forceinline__ void add_stage_dots(const uint16_t* stage, int width,
                                               float (&acc)[2 * kPart / 16][4]) {
#if PLUMB_WGMMA
  const uint64_t queries = wgmma_descriptor(shared_address(stage));
  const uint64_t keys = wgmma_descriptor(shared_address(stage + kSlots * kDimChunk));
  // Straight-line steps for each width (a branch between steps would serialize them).
  switch (width / kDotStep) {
    case 4:
      return stage_steps<4>(queries, keys, acc);
    case 3:
      return stage_steps<3>(queries, keys, acc);
    case 2:
      return stage_steps<2>(queries, keys, acc);
    default:
      return stage_steps<1>(queries, keys, acc);
  }
#else
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int a_row = warp * kScoreSlots + lane % 16, b_row = kSlots + lane / 16 * 8 + lane % 8;
#pragma unroll
  for (int k = 0; k < kDimChunk; k += kDotStep) {
    if (k >= width) break;
    uint32_t a[4];
    ldmatrix_x4(a, stage + SwizzledRows{}(a_row, k / 8 + lane / 16));
#pragma unroll
    for (int tile = 0; tile < kPart / 16; ++tile) {
      uint32_t b[4];
      ldmatrix_x4(b, stage + SwizzledRows{}(b_row + tile * 16, k / 8 + lane / 8 % 2));
      mma_bf16(acc[2 * tile], a, b[0], b[1]);
      mma_bf16(acc[2 * tile + 1], a, b[2], b[3]);
    }
  }
#endif
}

// The lanes of `lane`'s quad (the four lanes holding one mma row).
__device__ __forceinline__ unsigned quad_mask(int lane) {
  return 0xfu << (lane & ~3);
}

// The warp's slots' scores of partition `part` stored, and each slot's (max, sum exp) as partition_stats
// makes them: the max of the lane's entries in key order, then joined across the quad with the earlier key
// winning ties (the loop's result: the first entry of the largest value); the sum in key order, each lane of
// the quad adding all four lanes' terms (shuffled) as the loop does. A warp's call, no block barrier.
__device__ void finish_partition(const Params& params, const SlotEntry* slots, int64_t part, int rel,
                                 const float (&acc)[2 * kPart / 16][4]) {
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  constexpr int kTiles = 2 * kPart / 16;
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // the lane's slots: rows lane / 4 and lane / 4 + 8 of the warp's
    const Slot s = slot_at(slots[warp * kScoreSlots + lane / 4 + half * 8], part, rel);
    if (!s.valid) continue;  // the same for the quad
    const auto seen = [&](int jj) { return jj >= s.lo && jj <= s.hi; };
    float* scores = params.scores + (s.part_row + s.jrel) * kPart;
    float value[kTiles][2];
    float top = -INFINITY;
    int first = kPart;  // the key of top
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt)
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int jj = nt * 8 + (lane % 4) * 2 + b;
        value[nt][b] = params.scale * acc[nt][2 * half + b];
        if (!seen(jj)) continue;
        scores[jj] = value[nt][b];
        if (top < value[nt][b]) {
          top = value[nt][b];
          first = jj;
        }
      }
#pragma unroll
    for (int offset = 1; offset < 4; offset *= 2) {
      const float other = __shfl_xor_sync(quad_mask(lane), top, offset);
      const int other_first = __shfl_xor_sync(quad_mask(lane), first, offset);
      if (top < other || (top == other && other_first < first)) {
        top = other;
        first = other_first;
      }
    }
    float total = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) {
      const float terms[2] = {expf(value[nt][0] - top), expf(value[nt][1] - top)};
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          const float term = __shfl_sync(quad_mask(lane), terms[b], (lane & ~3) | q);
          if (seen(nt * 8 + q * 2 + b)) total = total + term;
        }
    }
    if (lane % 4 == 0) params.stats[s.part_row + s.jrel] = make_float2(top, total);
  }
}

// One block per (group of kWalkParts partitions, kv head and chunk of its heads, tile): each stage holds
// kDimChunk columns of the slots' queries and of one partition's keys; a warp's tensor-core dots for its
// slots run over a partition's stages, then finish_partition. Stages are copied kStages - 1 ahead.
__global__ void __launch_bounds__(kThreads) score_walk_kernel(Params params) {
  wait_for_previous_kernel();
  extern __shared__ __align__(128) char dynamic_shared[];
  uint16_t* stages = reinterpret_cast<uint16_t*>(  // [kStages][kScoreStageElements], 1024-byte aligned
      dynamic_shared + (1024 - shared_address(dynamic_shared) % 1024) % 1024);
  __shared__ TileRows tile;
  __shared__ SlotEntry slots[kSlots];
  if (!load_tile(params, tile)) return;
  const PartWalk walk{tile.part_lo, tile.part_hi};
  const int chunks = (params.head_dim + kDimChunk - 1) / kDimChunk, steps = walk.count() * chunks;
  if (steps == 0) return;  // before any copy: no copy may outlive its block
  const HeadChunk chunk = head_chunk(params, blockIdx.y, params.tile_heads);
  fill_slots(params, tile, chunk, slots);
  // The thread's query rows (nullptr: a slot past the tile or the chunk's heads, staged as zeros).
  const uint16_t* queries[kCopiesPerThread];
#pragma unroll
  for (int n = 0; n < kCopiesPerThread; ++n) {
    const int slot = copy_row(n), t = slot / params.tile_heads, h = slot % params.tile_heads;
    queries[n] = t < tile.rows && h < chunk.count
                     ? params.q + (tile.first_row + t) * params.q_stride +
                           static_cast<int64_t>(chunk.first + h) * params.head_dim
                     : nullptr;
  }
  // The step copied next: partition n of the walk, chunk c of the head dimension (counters rather than a
  // division by chunks a step).
  int copy_n = 0, copy_c = 0;
  const auto copy_step = [&](int step) {  // a commit group per step, empty past the last
    if (step < steps) {
      const int n = copy_n, column0 = copy_c * kDimChunk;
      if (++copy_c == chunks) copy_c = 0, ++copy_n;
      const int pieces = min(kDimChunk, params.head_dim - column0) / 8, piece = copy_piece();
      uint16_t* stage = stages + step % kStages * kScoreStageElements;
#pragma unroll
      for (int k = 0; k < kCopiesPerThread; ++k)
        if (piece < pieces) {
          const uint16_t* source = queries[k] != nullptr ? queries[k] + column0 + piece * 8 : params.q;
          copy16(stage + SwizzledRows{}(copy_row(k), piece), source, queries[k] != nullptr);
        }
      copy_cache_rows<SwizzledRows>(params, tile, tile.segment.keys, chunk.kv_head, walk.part(n), column0,
                                    pieces, tile.key_lo, tile.key_hi, stage);
    }
    copy_commit();
  };
  for (int step = 0; step < kStages - 1; ++step) copy_step(step);
  float acc[2 * kPart / 16][4] = {};
  int n = 0, c = 0;  // this step's partition of the walk and chunk of the head dimension
  for (int step = 0; step < steps; ++step) {
    copy_wait<kStages - 2>();  // this step's group is in (the thread's copies)
    fence_async_shared();      // ... and ordered before the tensor cores' reads
    __syncthreads();           // every thread's, and the stage copied next was used a step ago
    copy_step(step + kStages - 1);
    add_stage_dots(stages + step % kStages * kScoreStageElements,
                   min(kDimChunk, params.head_dim - c * kDimChunk), acc);
    if (++c < chunks) continue;
    c = 0;
    const int64_t part = walk.part(n++);
    finish_partition(params, slots, part, static_cast<int>(part - tile.part_lo), acc);
#pragma unroll
    for (int nt = 0; nt < 2 * kPart / 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
  }
}

// Score blocks per tile: groups of kWalkParts of the partitions a row sees and one more, which a tile of
// consecutive positions can reach; a block walks on by gridDim.x groups for rows that reach further.
unsigned walk_groups(const Params& params) {
  return static_cast<unsigned>((params.span + 1 + kWalkParts - 1) / kWalkParts);
}

}  // namespace

bool tiles_fit(const Params& params, size_t shared_optin) {
  return params.rows_vector && params.q_vector && params.head_dim % kDotStep == 0 &&
         std::max(kScoreShared, kWalkShared) + sizeof(TileRows) <= shared_optin;
}

cudaError_t launch_score_tiles(const Params& params, cudaStream_t stream) {
  const cudaError_t code = cudaFuncSetAttribute(
      score_walk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kScoreShared));
  if (code != cudaSuccess) return code;
  const dim3 grid(walk_groups(params), static_cast<unsigned>(params.kv_heads * params.head_chunks),
                  static_cast<unsigned>(params.tiles));
  launch_dependent(score_walk_kernel, grid, kThreads, kScoreShared, stream, params);
  return cudaGetLastError();
}

}  // namespace attention

}  // namespace plumb::cuda
