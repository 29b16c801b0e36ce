// Attention's launch (k_attention.cu has the kernels): the scratch a launch needs, and its rows cut into
// chunks of at most kMaxSegments segments whose scratch fits, each placed here and run by run_chunk. Chunks
// that take the tiled walk keep bf16 weights instead of fp32 partials, so they hold more rows.
#include <algorithm>

#include "cuda/attention_device.cuh"
#include "cuda/launchers.hpp"
#include "ops/attention_bucket.hpp"

namespace plumb::cuda {

namespace {

using namespace attention;

// Partitions a row can span: every position below `end` for a global layer, the window for a sliding one.
int span_for(int64_t end, int64_t window) {
  int64_t span = std::max<int64_t>(1, (end - 1) / kPart + 1);
  if (window > 0) span = std::min(span, (window - 1 + kPart - 1) / kPart + 1);
  return static_cast<int>(span);
}

bool whole_rows(int span) {
  return span <= kWholeSpan;
}

// A chunk's scratch: stats and scores per partition; for split rows m and l, and the partials (the per-row
// kernels) or the bf16 weights (the tiled walk). bytes_per_row sizes it, place_scratch places it.
size_t bytes_per_row(const AttentionArgs& launch, int span, bool tiled) {
  const size_t heads = static_cast<size_t>(launch.heads);
  const size_t per_part = sizeof(float2) + kPart * sizeof(float);
  if (whole_rows(span)) return heads * span * per_part;
  const size_t sums = tiled ? kPart * sizeof(uint16_t) : launch.head_dim * sizeof(float);
  return heads * (span * (per_part + sums) + sizeof(float2));
}

void place_scratch(Params& params, void* scratch, bool tiled) {
  const size_t row_heads = static_cast<size_t>(params.rows) * params.heads;
  const size_t partitions = row_heads * params.span;
  params.stats = static_cast<float2*>(scratch);
  params.norms = params.stats + partitions;
  params.scores = reinterpret_cast<float*>(params.norms + (params.whole ? 0 : row_heads));
  params.partial = params.scores + partitions * kPart;
  params.weights = tiled && !params.whole ? reinterpret_cast<uint16_t*>(params.partial) : nullptr;
}

// The largest segment end, bucketed (ops::attention_end_bucket): every span below is the same for the end
// itself, as partitions divide the bucket, and the launches then depend on the bucket alone.
static_assert(ops::kAttentionEndQuantum % kPart == 0, "partitions must divide the attention end bucket");
int64_t end_bucket(const AttentionArgs& launch) {
  int64_t end = 1;
  for (int64_t s = 0; s < launch.segment_count; ++s) end = std::max(end, launch.segments[s].end);
  return ops::attention_end_bucket(end);
}

cudaError_t device_limits(DeviceLimits& limits) {
  limits.blocks_wanted = 2 * int64_t{current_multiprocessors()};
  limits.shared_optin = current_shared_optin();
  return limits.blocks_wanted > 0 ? cudaSuccess : cudaErrorNoDevice;
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

bool vector_rows(const AttentionArgs& launch) {
  bool vector = launch.head_dim % 8 == 0;
  for (int64_t s = 0; s < launch.segment_count; ++s)
    vector = vector && aligned16(launch.segments[s].keys) && aligned16(launch.segments[s].values);
  return vector;
}

bool vector_queries(const AttentionArgs& launch) {
  return launch.head_dim % 8 == 0 && launch.q_stride % 8 == 0 && aligned16(launch.q);
}

// The parameters a launch's chunks share (rows and segments are placed chunk by chunk).
Params launch_params(const AttentionArgs& launch, int span) {
  Params params{};
  params.heads = static_cast<int>(launch.heads);
  params.kv_heads = static_cast<int>(launch.kv_heads);
  params.group = params.heads / params.kv_heads;
  params.head_dim = static_cast<int>(launch.head_dim);
  params.window = launch.window;
  params.scale = launch.scale;
  params.span = span;
  params.column_chunks = (params.head_dim + kColumns - 1) / kColumns;
  params.whole = whole_rows(span);
  params.rows_vector = vector_rows(launch);
  params.q_vector = vector_queries(launch);
  return params;
}

// Whether the launch's rows, as one chunk, take the tiled kernels (chunk_tiled decides for each chunk), so
// that its scratch holds weights instead of partials.
bool tiles_likely(const AttentionArgs& launch, int span) {
  DeviceLimits limits{};
  if (device_limits(limits) != cudaSuccess) return false;
  Params params = launch_params(launch, span);
  params.rows = launch.rows;
  params.segment_count = static_cast<int>(launch.segment_count);
  return chunk_tiled(params, limits);
}

}  // namespace

size_t attention_scratch_minimum(const AttentionArgs& launch) {
  return bytes_per_row(launch, span_for(end_bucket(launch), launch.window), false);
}

size_t attention_scratch_bytes(const AttentionArgs& launch) {
  const int span = span_for(end_bucket(launch), launch.window);
  const size_t row_bytes = bytes_per_row(launch, span, tiles_likely(launch, span));
  return std::max(attention_scratch_minimum(launch),
                  std::min(kScratchCap, row_bytes * static_cast<size_t>(launch.rows)));
}

cudaError_t launch_attention(const AttentionArgs& launch, void* scratch, size_t scratch_bytes,
                             cudaStream_t stream) {
  if (launch.rows == 0) return cudaSuccess;
  if (launch.heads / launch.kv_heads > kMaxGroup) return cudaErrorInvalidValue;
  DeviceLimits limits{};
  if (const cudaError_t code = device_limits(limits); code != cudaSuccess) return code;
  const int span = span_for(end_bucket(launch), launch.window);
  // Rows a chunk may take: more where its rows take the tiled walk, which keeps no partials.
  const auto limit = [&](bool tiled) {
    return std::min<int64_t>(kMaxChunkRows,
                             std::max<size_t>(1, scratch_bytes / bytes_per_row(launch, span, tiled)));
  };
  const int64_t tiled_limit = limit(true), row_limit = limit(false);
  Params params = launch_params(launch, span);
  int64_t segment = 0, segment_row = 0;  // the next row to place: segment index and row within it
  // Fills params' segments with up to `most` rows from (segment, segment_row) on, and moves past them.
  const auto take_rows = [&](int64_t most) {
    params.segment_count = 0;
    params.rows = 0;
    while (segment < launch.segment_count && params.rows < most && params.segment_count < kMaxSegments) {
      const AttentionSegmentArgs& source = launch.segments[segment];
      const int64_t take = std::min(source.rows - segment_row, most - params.rows);
      if (take > 0)
        params.segments[params.segment_count++] = {params.rows, take, source.keys, source.values,
                                                   source.capacity};
      params.rows += take;
      segment_row += take;
      if (segment_row == source.rows) {
        ++segment;
        segment_row = 0;
      }
    }
  };
  while (segment < launch.segment_count) {
    const int64_t chunk_first = launch.segments[segment].first_row + segment_row;
    const int64_t first_segment = segment, first_segment_row = segment_row;
    take_rows(tiled_limit);
    bool tiled = chunk_tiled(params, limits);
    if (tiled_limit > row_limit && !tiled) {  // per-row kernels: room for partials
      segment = first_segment;
      segment_row = first_segment_row;
      take_rows(row_limit);
      tiled = chunk_tiled(params, limits);
    }
    if (params.rows == 0) continue;
    params.q = launch.q + chunk_first * launch.q_stride;
    params.q_stride = launch.q_stride;
    params.positions = launch.positions + chunk_first;
    params.out = launch.out + chunk_first * launch.out_stride;
    params.out_stride = launch.out_stride;
    place_scratch(params, scratch, tiled);
    const cudaError_t code = run_chunk(params, tiled, limits, stream);
    if (code != cudaSuccess) return code;
  }
  return cudaSuccess;
}

}  // namespace plumb::cuda