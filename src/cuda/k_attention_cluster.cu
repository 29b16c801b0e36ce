// Whole rows (up to kWholeSpan partitions) in one launch on sm_90: a cluster of one block a partition per
// (row, kv head and chunk of its query heads). Each block makes its partition's scores and (max, sum exp) as
// score_kernel does, keeping them in shared memory; after a cluster barrier each reads every partition's
// stats from its peers to merge m and l in partition order (normalizer's ordered_max and ordered_sum), makes
// its p_j = bf16(exp(s_j - m) / l) and its partition's sums p_j v_j (partition_values, column strip by
// strip); after a second barrier each block adds a share of the outputs over the partitions in order, out =
// sum_0, then out + sum_j, rounded to bf16 once: the steps and order of score_kernel and values_kernel's
// whole rows, so the same bits, with no scores or stats through global memory and one launch instead of two.
// Calls of up to kClusterRows rows take it; PLUMB_CUDA_ATTENTION_CLUSTERS=0 gives them the two launches.
// With 16-byte query and cache rows and head_dim a multiple of 16 a block copies its query rows and its
// partition's keys into shared memory with the values (one slot computation a key) and dots them with
// ldmatrix (partition_dots_staged); PLUMB_CUDA_ATTENTION_STAGED_DOTS=0 reads them from global memory instead.
#include <string_view>

#include "cuda/attention_device.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"
#include "cuda/tma.cuh"

namespace plumb::cuda::attention {

namespace {

// The dynamic shared memory of a block: the partition's value strips, then its sums [H][head_dim]; staged,
// then its query rows [H][staged_stride] and keys [kPart][staged_stride].
size_t cluster_shared_bytes(int heads, int head_dim, bool staged) {
  const int strips = (head_dim + kColumns - 1) / kColumns;
  return size_t(strips) * kStripElements * sizeof(uint16_t) + size_t(heads) * head_dim * sizeof(float) +
         (staged ? staged_rows_bytes(heads, head_dim) : 0);
}

template <int H, bool kVector, bool kStaged>
__global__ void __launch_bounds__(kThreads) whole_cluster_kernel(Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(H <= kScoreSlots, "a block's heads are rows of one mma tile");
  static_assert(kVector || !kStaged, "staged rows are copied 16 bytes at a time (rows_vector, q_vector)");
  wait_for_previous_kernel();
  extern __shared__ __align__(16) char dynamic_shared[];
  __shared__ float scores[H][kScoreStride];       // exp(s - max) once partition_stats is done
  __shared__ __align__(16) float raw[H * kPart];  // s, as copy_scores stages it
  __shared__ __align__(16) uint16_t weights[kScoreSlots * kWeightStride];
  __shared__ int lo[H], hi[H];
  __shared__ float stat_max[H], stat_sum[H], top[H], total[H];
  __shared__ float2 stats[H];
  const int dim = params.head_dim, strips = params.column_chunks;
  uint16_t* values = reinterpret_cast<uint16_t*>(dynamic_shared);            // [strips][kPart][kValueStride]
  float* sums = reinterpret_cast<float*>(values + strips * kStripElements);  // [H][dim]
  uint16_t* queries = reinterpret_cast<uint16_t*>(sums + H * dim);           // [H][stride] (kStaged)
  uint16_t* staged_keys = queries + H * staged_stride(dim);                  // [kPart][stride] (kStaged)
  const int64_t r = blockIdx.z, jrel = blockIdx.x;
  const int parts_in_cluster = static_cast<int>(gridDim.x);
  const RowKeys row = row_keys(params, r);
  const bool mine = jrel < row.parts;  // blocks past the row's partitions still meet the barriers
  const HeadChunk chunk = head_chunk(params, blockIdx.y, H);
  const Window w = window_of(row, mine ? jrel : 0);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if constexpr (kStaged) {
    if (mine) {
      copy_query_rows(params, r, chunk, queries);
      copy_key_rows(params, row, chunk.kv_head, w, staged_keys, values);
    }
  } else if (kVector && mine) {  // the partition's values, copied while its scores are made
    for (int s = 0; s < strips; ++s)
      copy_values(params, row, chunk.kv_head, w, s * kColumns, values + s * kStripElements);
  }
  copy_commit();
  if (mine) {
    float dots[2][4];
    if constexpr (kStaged) {
      copy_wait<0>();
      __syncthreads();  // the query rows, keys and values are in
      const int stride = staged_stride(dim);
      partition_dots_staged(queries, chunk.count, staged_keys + warp * 16 * stride, stride, dim, dots);
    } else {
      chunk_dots_direct<kVector>(params, row, r, chunk, w, dim, warp, lane, dots);
    }
    each_fragment_element<1, 2>([&](int, int nt, int e) {
      const int h = fragment_row(lane, e), j = warp * 16 + nt * 8 + fragment_col(lane, e);
      if (h >= chunk.count || !w.visible(w.base + j)) return;
      const float s = params.scale * dots[nt][e];
      scores[h][j] = s;
      raw[h * kPart + j] = s;
    });
    if (threadIdx.x < H) {
      lo[threadIdx.x] = static_cast<int>(w.lo - w.base);
      hi[threadIdx.x] = static_cast<int>(w.hi - w.base);
    }
    partition_stats<H>(scores, chunk.count, lo, hi, stats);  // every thread of the block calls it
    if (threadIdx.x < chunk.count) {
      stat_max[threadIdx.x] = stats[threadIdx.x].x;
      stat_sum[threadIdx.x] = stats[threadIdx.x].y;
    }
  }
  cluster_sync();  // every partition's stats are in
  if (mine) {
    const int parts = static_cast<int>(row.parts);
    for (int h = warp; h < chunk.count; h += kWarps) {  // normalizer's steps over the peers' stats
      const float m = ordered_max([&](int k) { return load_from_cta(&stat_max[h], k); }, parts);
      const float l = ordered_sum(
          [&](int k) { return load_from_cta(&stat_sum[h], k) * expf(load_from_cta(&stat_max[h], k) - m); },
          parts);
      if (lane == 0) {
        top[h] = m;
        total[h] = l;
      }
    }
    zero_weight_rows(chunk.count, weights);
    copy_wait<0>();
    __syncthreads();  // m, l and the copied values are in
    stage_weights(raw, w, chunk.count, top, total, weights);
    for (int s = 0; s < strips; ++s) {
      uint16_t* staged = values + s * kStripElements;
      if constexpr (!kVector) stage_values(params, row, chunk.kv_head, w, s * kColumns, staged);
      __syncthreads();  // the weights and the strip's values are in
      float acc[4][4];
      partition_values(weights, staged, warp * 32, acc);
      each_fragment_element<1, 4>([&](int, int nt, int e) {
        const int h = fragment_row(lane, e), c = s * kColumns + warp * 32 + nt * 8 + fragment_col(lane, e);
        if (h < chunk.count && c < dim) sums[h * dim + c] = acc[nt][e];
      });
    }
  }
  cluster_sync();  // every partition's sums are in
  const int parts = static_cast<int>(row.parts), outputs = chunk.count * dim;
  for (int i = static_cast<int>(jrel * kThreads + threadIdx.x); i < outputs;
       i += parts_in_cluster * kThreads) {
    float out = load_from_cta(&sums[i], 0);
    for (int k = 1; k < parts; ++k) out = out + load_from_cta(&sums[i], k);  // as values_kernel adds them
    const int h = i / dim, c = i % dim;
    params.out[r * params.out_stride + static_cast<int64_t>(chunk.first + h) * dim + c] = bf16_bits(out);
  }
  cluster_sync();  // no block leaves while a peer may still read its sums
#else
  (void)params;
#endif
}

using Kernel = void (*)(Params);

template <int H>
Kernel cluster_kernel(bool vector, bool staged) {
  if (staged) return whole_cluster_kernel<H, true, true>;
  return vector ? whole_cluster_kernel<H, true, false> : whole_cluster_kernel<H, false, false>;
}

Kernel kernel_for(int heads, bool vector, bool staged) {
  switch (heads) {
    case 16:
      return cluster_kernel<16>(vector, staged);
    case 4:
      return cluster_kernel<4>(vector, staged);
    case 2:
      return cluster_kernel<2>(vector, staged);
    default:
      return cluster_kernel<1>(vector, staged);
  }
}

// Whether a launch's blocks stage their query rows and keys (copy_key_rows, partition_dots_staged).
bool staged_dots(const Params& params, int heads) {
  return staged_rows_fit(params) &&
         cluster_shared_bytes(heads, params.head_dim, true) <= current_shared_optin();
}

// At 32 rows a call has blocks enough for the two launches, and the clusters were slower (H100: 0.047 against
// 0.035 ms a sliding layer at context 140, decode 4.6% slower at 32 streams); at 1 and 8 rows faster or even.
constexpr int64_t kClusterRows = 8;

}  // namespace

bool clusters_take(const Params& params) {
  static const bool on = env_switch_on("PLUMB_CUDA_ATTENTION_CLUSTERS");
  return on && params.whole && params.span <= kWholeSpan && params.rows <= kClusterRows &&
         std::string_view(PLUMB_CUDA_TARGETS).find("90") != std::string_view::npos &&
         current_compute_capability() >= 90;
}

cudaError_t launch_whole_clusters(Params params, int heads, cudaStream_t stream) {
  params.head_chunks = (params.group + heads - 1) / heads;
  const bool staged = staged_dots(params, heads);
  const Kernel kernel = kernel_for(heads, params.rows_vector, staged);
  const size_t shared = cluster_shared_bytes(heads, params.head_dim, staged);
  cudaError_t code =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
  if (code != cudaSuccess) return code;
  const dim3 grid(static_cast<unsigned>(params.span),
                  static_cast<unsigned>(params.kv_heads * params.head_chunks),
                  static_cast<unsigned>(params.rows));
  return launch_dependent_clusters(kernel, grid, dim3(static_cast<unsigned>(params.span)), dim3(kThreads),
                                   shared, stream, params);
}

}  // namespace plumb::cuda::attention
