// Attention: s_j = scale * (q · k_j) in fp32 (the dot as the matmul's k16 mma steps over the head dimension,
// attention_device.cuh's partition_dots_direct), p_j = bf16(exp(s_j - m) / l), out = bf16(sum_j p_j v_j) with
// each partition's sum as mma steps over its keys (partition_values); fp32 steps otherwise (--fmad=false).
// The key axis is cut into partitions of kPart absolute positions; m and l come from per-partition (max, sum
// exp) merged in partition order, and each partition's sum p_j v_j (k16 steps over its keys in position
// order) is added in partition order. Partitions depend only on absolute key positions, never on the rows in
// the call, so prompt and decode rows get the same bits (I1, I2).
//
// The work: score_kernel computes each partition's scores once (into scratch) and its (max, sum exp).
// Rows of up to kWholeSpan partitions are "whole": one values block merges the stats into m and l, makes p_j
// and adds each partition's sum p_j v_j in order, writing out. Longer rows are "split": normalize_kernel
// merges m and l once per (row, head), a values block per partition writes its partial sums, merge_kernel
// adds them in partition order. On sm_90 whole rows of calls of up to 8 rows take k_attention_cluster.cu's
// one launch instead, a cluster of one block a partition making the same steps in the same order. Blocks
// take a few query heads of a kv group (1, 2, 4 or 16, whichever gives enough blocks) and values blocks a
// strip of kColumns output columns. Prompt chunks of groups up to kSlots heads take k_attention_tiles.cu's
// score walk, which stages each partition once for a tile of rows, and for split rows normalize_kernel's
// weights and k_attention_walk.cu's values walk, which adds each row's sums in registers in the same order
// (no partials, no merge). No choice here changes a bit.
#include <algorithm>

#include "cuda/attention_device.cuh"
#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

using namespace attention;  // the kernels' own pieces (attention_device.cuh)

// One block per (partition, kv head and chunk of its query heads, row): a warp's tensor-core dots per 16 keys
// with the operands read from the query and cache rows (partition_dots_direct: the prompt tiles' steps on
// staged rows), then each head's (max, sum exp).
// With kStaged the query rows and keys go through shared memory first (copy_query_rows, copy_key_rows,
// partition_dots_staged: the same mma steps on the same operands).
template <int H, bool kVector, bool kStaged>
__global__ void __launch_bounds__(kThreads) score_kernel(Params params) {
  static_assert(H <= kScoreSlots, "a block's heads are rows of one mma tile");
  static_assert(kVector || !kStaged, "staged rows are copied 16 bytes at a time (rows_vector, q_vector)");
  wait_for_previous_kernel();
  const int dim = params.head_dim;
  __shared__ float scores[H][kScoreStride];
  __shared__ int lo[H], hi[H];
  __shared__ float2 stats[H];
  const int64_t r = blockIdx.z, jrel = blockIdx.x;
  const RowKeys row = row_keys(params, r);
  if (jrel >= row.parts) return;
  const HeadChunk chunk = head_chunk(params, blockIdx.y, H);
  const Window w = window_of(row, jrel);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  float dots[2][4];
  if constexpr (kStaged) {
    extern __shared__ __align__(16) char dynamic_shared[];
    uint16_t* queries = reinterpret_cast<uint16_t*>(dynamic_shared);  // [H][stride]
    const int stride = staged_stride(dim);
    uint16_t* keys = queries + H * stride;  // [kPart][stride]
    copy_query_rows(params, r, chunk, queries);
    copy_key_rows(params, row, chunk.kv_head, w, keys, nullptr);
    copy_commit();
    copy_wait<0>();
    __syncthreads();  // the query rows and keys are in
    partition_dots_staged(queries, chunk.count, keys + warp * 16 * stride, stride, dim, dots);
  } else {
    chunk_dots_direct<kVector>(params, row, r, chunk, w, dim, warp, lane, dots);
  }
  const int64_t head0 = r * params.heads + chunk.first;  // the chunk's first (row, head) in the scratch
  each_fragment_element<1, 2>([&](int, int nt, int e) {
    const int h = fragment_row(lane, e), j = warp * 16 + nt * 8 + fragment_col(lane, e);
    if (h >= chunk.count || !w.visible(w.base + j)) return;
    const float s = params.scale * dots[nt][e];
    scores[h][j] = s;
    params.scores[((head0 + h) * params.span + jrel) * kPart + j] = s;
  });
  if (threadIdx.x < H) {
    lo[threadIdx.x] = static_cast<int>(w.lo - w.base);
    hi[threadIdx.x] = static_cast<int>(w.hi - w.base);
  }
  partition_stats<H>(scores, chunk.count, lo, hi, stats);
  if (threadIdx.x < chunk.count)
    params.stats[(head0 + threadIdx.x) * params.span + jrel] = stats[threadIdx.x];
}

// m and l of one (row, head): its partitions' (max, sum exp) merged in partition order; a warp's call.
__device__ float2 normalizer(const Params& params, int64_t row_head, int parts) {
  const float2* stats = params.stats + row_head * params.span;
  const float m = ordered_max([&](int k) { return stats[k].x; }, parts);
  return make_float2(m, ordered_sum([&](int k) { return stats[k].y * expf(stats[k].x - m); }, parts));
}

// Split rows' m and l, made once per (row, head) for all their values blocks: a warp per head. For the
// tiled walk also the weights p_j = bf16(exp(s_j - m) / l) of every partition, zeros for keys not seen (the
// values of stage_weights), a lane a pair of keys.
__global__ void __launch_bounds__(kThreads) normalize_kernel(Params params) {
  wait_for_previous_kernel();
  const int64_t r = blockIdx.y;
  const int head = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x) / 32;
  if (head >= params.heads) return;
  const RowKeys row = row_keys(params, r);
  const int64_t row_head = r * params.heads + head;
  const float2 norm = normalizer(params, row_head, static_cast<int>(row.parts));
  if (threadIdx.x % 32 == 0) params.norms[row_head] = norm;
  if (params.weights == nullptr) return;
  const int jj = static_cast<int>(threadIdx.x % 32) * 2;
#pragma unroll 4
  for (int64_t jrel = 0; jrel < row.parts; ++jrel) {  // loads of several partitions in flight
    const Window w = window_of(row, jrel);
    const int64_t at = (row_head * params.span + jrel) * kPart + jj;
    const float2 s = *reinterpret_cast<const float2*>(params.scores + at);  // unseen keys' entries unused
    const uint32_t low = w.visible(w.base + jj) ? bf16_bits(expf(s.x - norm.x) / norm.y) : 0u;
    const uint32_t high = w.visible(w.base + jj + 1) ? bf16_bits(expf(s.y - norm.x) / norm.y) : 0u;
    *reinterpret_cast<uint32_t*>(params.weights + at) = low | high << 16;
  }
}

// m and l of the chunk's heads: merged here for whole rows (few partitions), read for split ones.
__device__ void normalizers(const Params& params, const RowKeys& row, int64_t head0, int count, float* top,
                            float* total) {
  if (!params.whole) {
    for (int h = static_cast<int>(threadIdx.x); h < count; h += kThreads) {
      top[h] = params.norms[head0 + h].x;
      total[h] = params.norms[head0 + h].y;
    }
    return;
  }
  for (int h = static_cast<int>(threadIdx.x) / 32; h < count; h += kWarps) {
    const float2 norm = normalizer(params, head0 + h, static_cast<int>(row.parts));
    if (threadIdx.x % 32 == 0) {
      top[h] = norm.x;
      total[h] = norm.y;
    }
  }
}

// One block per (partition or whole row, kv head, chunk of its heads and strip of columns, row): each
// partition's weights and values staged as bf16, a warp's tensor-core sums for 32 columns (partition_values,
// as the tiled kernel makes them), partitions added in order (whole rows) or written as partials. A
// partition's scores (and values, for vector rows) are copied one partition ahead, so a whole row waits on
// memory about once rather than once a partition.
template <int H, bool kVector>
__global__ void __launch_bounds__(kThreads, 4) values_kernel(Params params) {
  static_assert(H <= kScoreSlots, "a block's heads are rows of one mma tile");
  constexpr int kValueBuffers = kVector ? 2 : 1;
  wait_for_previous_kernel();
  __shared__ __align__(16) uint16_t weights[kScoreSlots * kWeightStride];
  __shared__ __align__(16) uint16_t values[kValueBuffers][kPart * kValueStride];
  __shared__ __align__(16) float scores[2][kScoreSlots * kPart];
  __shared__ float top[H], total[H];
  const int64_t r = blockIdx.z;
  const RowKeys row = row_keys(params, r);
  const int64_t begin = params.whole ? 0 : blockIdx.x, end = params.whole ? row.parts : begin + 1;
  if (begin >= row.parts) return;
  const HeadChunk chunk = head_chunk(params, static_cast<int>(blockIdx.y) / params.column_chunks, H);
  const int column0 = static_cast<int>(blockIdx.y) % params.column_chunks * kColumns;
  const int dim = params.head_dim, warp = static_cast<int>(threadIdx.x) / 32,
            lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t head0 = r * params.heads + chunk.first;
  const auto copy_partition = [&](int64_t jrel) {  // one cp.async group a partition, empty past the end
    if (jrel < end) {
      const Window w = window_of(row, jrel);
      copy_scores<H>(params, head0, jrel, w, chunk.count, scores[(jrel - begin) % 2]);
      if constexpr (kVector)
        copy_values(params, row, chunk.kv_head, w, column0, values[(jrel - begin) % kValueBuffers]);
    }
    copy_commit();
  };
  copy_partition(begin);
  zero_weight_rows(chunk.count, weights);
  normalizers(params, row, head0, chunk.count, top, total);
  float out[4][4] = {};  // whole rows: the partitions' sums added in order
  for (int64_t jrel = begin; jrel < end; ++jrel) {
    __syncthreads();  // m and l are in; the last partition's weights and buffers are used
    copy_partition(jrel + 1);
    const Window w = window_of(row, jrel);
    uint16_t* staged = values[(jrel - begin) % kValueBuffers];
    if constexpr (!kVector) stage_values(params, row, chunk.kv_head, w, column0, staged);
    copy_wait<1>();  // this partition's group is in
    __syncthreads();
    stage_weights(scores[(jrel - begin) % 2], w, chunk.count, top, total, weights);
    __syncthreads();
    float acc[4][4];
    partition_values(weights, staged, warp * 32, acc);
    each_fragment_element<1, 4>([&](int, int nt, int e) {
      const int h = fragment_row(lane, e), c = warp * 32 + nt * 8 + fragment_col(lane, e);
      if (h >= chunk.count || column0 + c >= dim) return;
      if (params.whole)
        out[nt][e] = jrel == 0 ? acc[nt][e] : out[nt][e] + acc[nt][e];  // as merge_kernel adds them
      else
        params.partial[((head0 + h) * params.span + jrel) * dim + column0 + c] = acc[nt][e];
    });
  }
  if (!params.whole) return;
  each_fragment_element<1, 4>([&](int, int nt, int e) {
    const int h = fragment_row(lane, e), c = warp * 32 + nt * 8 + fragment_col(lane, e);
    if (h < chunk.count && column0 + c < dim)
      params.out[r * params.out_stride + static_cast<int64_t>(chunk.first + h) * dim + column0 + c] =
          bf16_bits(out[nt][e]);
  });
}

// The split partials of each (row, head, column) added in partition order.
__global__ void __launch_bounds__(kThreads) merge_kernel(Params params) {
  wait_for_previous_kernel();
  const int64_t r = blockIdx.y;
  const int head = static_cast<int>(blockIdx.x) / params.column_chunks;
  const int d =
      static_cast<int>(blockIdx.x) % params.column_chunks * kColumns + static_cast<int>(threadIdx.x);
  if (d >= params.head_dim) return;
  const RowKeys row = row_keys(params, r);
  const float* partial = params.partial + (r * params.heads + head) * params.span * params.head_dim + d;
  float total = partial[0];
  for (int64_t j = 1; j < row.parts; ++j) total = total + partial[j * params.head_dim];
  params.out[r * params.out_stride + static_cast<int64_t>(head) * params.head_dim + d] = bf16_bits(total);
}

using Kernel = void (*)(Params);

// How a kernel reads the query and cache rows: element by element, 16 bytes at a time, or (score_kernel)
// staged in shared memory.
enum class RowReads { kElements, kVectors, kStaged };

template <int H>
struct ScoreKernel {
  static Kernel get(RowReads reads) {
    if (reads == RowReads::kStaged) return score_kernel<H, true, true>;
    return reads == RowReads::kVectors ? score_kernel<H, true, false> : score_kernel<H, false, false>;
  }
};

template <int H>
struct ValuesKernel {
  static Kernel get(RowReads reads) {
    return reads != RowReads::kElements ? values_kernel<H, true> : values_kernel<H, false>;
  }
};

// Query heads per block: the most of 16, 4 and 2 (up to `most`) that still gives the blocks wanted, since a
// larger chunk reads each key or value row once for more heads; else 1. Chunks of 2 (the 12B sliding layers'
// kv groups) made 32-stream decode 3.3% faster (H200).
int heads_per_block(int group, int64_t blocks_per_head_chunk, int64_t wanted, int most) {
  for (int heads : {16, 4, 2})
    if (heads <= most && heads <= group && blocks_per_head_chunk * ((group + heads - 1) / heads) >= wanted)
      return heads;
  return 1;
}

template <template <int> class Of>
Kernel kernel_for_heads(int heads, RowReads reads) {
  switch (heads) {
    case 16:
      return Of<16>::get(reads);
    case 4:
      return Of<4>::get(reads);
    case 2:
      return Of<2>::get(reads);
    default:
      return Of<1>::get(reads);
  }
}

RowReads row_reads(const Params& params) {
  return params.rows_vector ? RowReads::kVectors : RowReads::kElements;
}

// Tiles of a kv group's heads times kSlots / heads rows, none crossing a segment.
void plan_tiles(Params& params) {
  params.tile_heads = params.group;
  params.tile_rows = kSlots / params.tile_heads;
  params.head_chunks = (params.group + params.tile_heads - 1) / params.tile_heads;
  params.tiles = 0;
  for (int s = 0; s < params.segment_count; ++s)
    params.tiles += (params.segments[s].rows + params.tile_rows - 1) / params.tile_rows;
}

cudaError_t launch_scores(Params params, const DeviceLimits& limits, cudaStream_t stream) {
  const int score_heads = heads_per_block(params.group, int64_t{params.span} * params.kv_heads * params.rows,
                                          limits.blocks_wanted, 16);
  params.head_chunks = (params.group + score_heads - 1) / score_heads;
  const size_t shared = staged_rows_bytes(score_heads, params.head_dim);
  const bool staged = staged_rows_fit(params) && shared <= limits.shared_optin;
  const Kernel score =
      kernel_for_heads<ScoreKernel>(score_heads, staged ? RowReads::kStaged : row_reads(params));
  if (staged) {
    const cudaError_t code =
        cudaFuncSetAttribute(score, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (code != cudaSuccess) return code;
  }
  const auto kv_heads = static_cast<unsigned>(params.kv_heads);
  launch_dependent(score,
                   dim3(params.span, kv_heads * params.head_chunks, static_cast<unsigned>(params.rows)),
                   kThreads, staged ? shared : 0, stream, params);
  return cudaGetLastError();
}

cudaError_t launch_values(Params params, const DeviceLimits& limits, cudaStream_t stream) {
  const auto rows = static_cast<unsigned>(params.rows);
  const auto kv_heads = static_cast<unsigned>(params.kv_heads);
  const unsigned value_parts = params.whole ? 1 : params.span;
  const int values_heads = heads_per_block(
      params.group, int64_t{value_parts} * kv_heads * params.column_chunks * rows, limits.blocks_wanted, 16);
  params.head_chunks = (params.group + values_heads - 1) / values_heads;
  const Kernel values = kernel_for_heads<ValuesKernel>(values_heads, row_reads(params));
  launch_dependent(values, dim3(value_parts, kv_heads * params.head_chunks * params.column_chunks, rows),
                   kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace

namespace attention {

bool staged_rows_fit(const Params& params) {
  static const bool on = env_switch_on("PLUMB_CUDA_ATTENTION_STAGED_DOTS");
  return on && params.rows_vector && params.q_vector && params.head_dim % kDotStep == 0;
}

// Whether a chunk's rows take the tiled kernels.
bool chunk_tiled(const Params& params, const DeviceLimits& limits) {
  return params.group <= kTileMaxGroup && params.rows >= kTileMinRows * params.segment_count &&
         tiles_fit(params, limits.shared_optin);
}

cudaError_t run_chunk(Params params, bool tiled, const DeviceLimits& limits, cudaStream_t stream) {
  const auto rows = static_cast<unsigned>(params.rows);
  if (!tiled && clusters_take(params))  // heads a block as the score kernel takes them
    return launch_whole_clusters(
        params,
        heads_per_block(params.group, int64_t{params.span} * params.kv_heads * params.rows,
                        limits.blocks_wanted, 16),
        stream);
  if (tiled) plan_tiles(params);
  cudaError_t code = tiled ? launch_score_tiles(params, stream) : launch_scores(params, limits, stream);
  if (code != cudaSuccess) return code;
  if (!params.whole)
    launch_dependent(normalize_kernel, dim3((params.heads + kWarps - 1) / kWarps, rows), kThreads, 0, stream,
                     params);
  if (tiled && !params.whole) return launch_value_walk(params, stream);  // writes out: no partials to merge
  code = launch_values(params, limits, stream);
  if (code != cudaSuccess) return code;
  if (!params.whole)
    launch_dependent(merge_kernel, dim3(params.heads * params.column_chunks, rows), kThreads, 0, stream,
                     params);
  return cudaGetLastError();
}

}  // namespace attention

}  // namespace plumb::cuda
