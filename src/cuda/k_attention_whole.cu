// Attention of whole rows in one launch: score_kernel's scores and per-partition (max, sum exp), the merged m
// and l and values_kernel's weights and sums, made by one block per (kv head, chunk of its query heads, strip
// of kColumns output columns, row) with the scores kept in shared memory. The same dots, the same loops in
// the same order, the same roundings, so the same bits as the two launches (k_attention.cu); a block with one
// of several column strips makes its heads' scores again, which is cheaper than a launch and its wait at
// decode sizes.
#include "cuda/attention_device.cuh"
#include "cuda/dependent_launch.cuh"

namespace plumb::cuda::attention {

namespace {

static_assert(kScoreSlots * kWholeSpan <= kThreads, "a thread a (head, partition) for the stats");

// Dynamic shared memory of a block: one partition's values and weights, the chunk's scores for every
// partition of the span, and their stats.
struct WholeRowsShared {
  size_t values, weights, scores, stats, total;
};

__host__ __device__ constexpr WholeRowsShared whole_rows_shared(int heads, int span) {
  WholeRowsShared s{};
  s.values = 0;
  s.weights = s.values + sizeof(uint16_t) * kPart * kValueStride;
  s.scores = s.weights + sizeof(uint16_t) * kScoreSlots * kWeightStride;
  s.stats = s.scores + sizeof(float) * heads * span * kPart;
  s.total = s.stats + sizeof(float2) * heads * span;
  return s;
}

template <int H, bool kVector>
__global__ void __launch_bounds__(kThreads, 4) whole_row_kernel(Params params) {
  static_assert(H <= kScoreSlots, "a block's heads are rows of one mma tile");
  wait_for_previous_kernel();
  extern __shared__ __align__(16) char shared[];
  const WholeRowsShared at = whole_rows_shared(H, params.span);
  auto* values = reinterpret_cast<uint16_t*>(shared + at.values);
  auto* weights = reinterpret_cast<uint16_t*>(shared + at.weights);
  auto* scores = reinterpret_cast<float*>(shared + at.scores);  // [H][span * kPart]
  auto* stats = reinterpret_cast<float2*>(shared + at.stats);   // [H][span]
  __shared__ float top[H], total[H];
  const int64_t r = blockIdx.y;
  const RowKeys row = row_keys(params, r);
  const auto parts = static_cast<int>(row.parts);
  const HeadChunk chunk = head_chunk(params, static_cast<int>(blockIdx.x) / params.column_chunks, H);
  const int column0 = static_cast<int>(blockIdx.x) % params.column_chunks * kColumns;
  const int dim = params.head_dim, warp = static_cast<int>(threadIdx.x) / 32,
            lane = static_cast<int>(threadIdx.x) % 32, row_scores = params.span * kPart;
  const uint16_t* q = params.q + r * params.q_stride + static_cast<int64_t>(chunk.first) * dim;
  const auto query_row = [&](int h) { return h < chunk.count ? q + static_cast<int64_t>(h) * dim : nullptr; };
  // score_kernel's steps: warp w dots keys 16 w .. 16 w + 15 of every partition.
  for (int jrel = 0; jrel < parts; ++jrel) {
    const Window w = window_of(row, jrel);
    const auto key_row = [&](int jj) {
      return w.visible(w.base + jj)
                 ? cache_row(row.segment.keys, row, params.kv_heads, chunk.kv_head, dim, w.base + jj)
                 : nullptr;
    };
    float dots[2][4];
    partition_dots_direct(query_row(lane / 4), query_row(lane / 4 + 8), params.q_vector,
                          key_row(warp * 16 + lane / 4), key_row(warp * 16 + 8 + lane / 4), kVector, dim,
                          dots);
    each_fragment_element<1, 2>([&](int, int nt, int e) {
      const int h = fragment_row(lane, e), j = warp * 16 + nt * 8 + fragment_col(lane, e);
      if (h < chunk.count && w.visible(w.base + j))
        scores[h * row_scores + jrel * kPart + j] = params.scale * dots[nt][e];
    });
  }
  __syncthreads();
  // partition_stats' loops for every (head, partition) at once: the max, then the sum of exp(s - max) in
  // order.
  if (const int t = static_cast<int>(threadIdx.x); t < chunk.count * parts) {
    const int h = t / parts, jrel = t % parts;
    const Window w = window_of(row, jrel);
    const float* s = scores + h * row_scores + jrel * kPart;
    const auto lo = static_cast<int>(w.lo - w.base), hi = static_cast<int>(w.hi - w.base);
    float most = -INFINITY;
    for (int k = lo; k <= hi; ++k) most = most < s[k] ? s[k] : most;
    float sum = 0.0f;
    for (int k = lo; k <= hi; ++k) sum = sum + expf(s[k] - most);
    stats[h * params.span + jrel] = make_float2(most, sum);
  }
  __syncthreads();
  for (int h = warp; h < chunk.count; h += kWarps) {
    const float2 norm = normalizer(stats + h * params.span, parts);
    if (lane == 0) {
      top[h] = norm.x;
      total[h] = norm.y;
    }
  }
  // values_kernel's steps for a whole row.
  float out[4][4] = {};
  for (int jrel = 0; jrel < parts; ++jrel) {
    __syncthreads();  // m and l are in; the last partition's weights and values are used
    const Window w = window_of(row, jrel);
    const float* partition = scores + jrel * kPart;
    stage_weights([&](int h, int jj) { return partition[h * row_scores + jj]; }, w, chunk.count, top, total,
                  weights);
    stage_values<kVector>(params, row, chunk.kv_head, w, column0, values);
    __syncthreads();
    float acc[4][4];
    partition_values(weights, values, warp * 32, acc);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) out[nt][e] = jrel == 0 ? acc[nt][e] : out[nt][e] + acc[nt][e];
  }
  each_fragment_element<1, 4>([&](int, int nt, int e) {
    const int h = fragment_row(lane, e), c = warp * 32 + nt * 8 + fragment_col(lane, e);
    if (h < chunk.count && column0 + c < dim)
      params.out[r * params.out_stride + static_cast<int64_t>(chunk.first + h) * dim + column0 + c] =
          bf16_bits(out[nt][e]);
  });
}

template <int H>
cudaError_t launch_whole_rows_of(const Params& params, cudaStream_t stream) {
  const auto kernel = params.rows_vector ? whole_row_kernel<H, true> : whole_row_kernel<H, false>;
  const size_t shared = whole_rows_shared(H, params.span).total;
  const cudaError_t code =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
  if (code != cudaSuccess) return code;
  const dim3 grid(static_cast<unsigned>(params.kv_heads * params.head_chunks * params.column_chunks),
                  static_cast<unsigned>(params.rows));
  launch_dependent(kernel, grid, kThreads, shared, stream, params);
  return cudaGetLastError();
}

}  // namespace

size_t whole_rows_shared_bytes(int heads, int span) {
  return whole_rows_shared(heads, span).total;
}

cudaError_t launch_whole_rows(Params params, int heads, cudaStream_t stream) {
  params.head_chunks = (params.group + heads - 1) / heads;
  return heads == 16  ? launch_whole_rows_of<16>(params, stream)
         : heads == 4 ? launch_whole_rows_of<4>(params, stream)
                      : launch_whole_rows_of<1>(params, stream);
}

}  // namespace plumb::cuda::attention
