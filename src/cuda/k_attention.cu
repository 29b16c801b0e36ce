// Attention: s_j = scale * (q · k_j) in fp32 (the CPU backend's 16-lane dot order), p_j = bf16(exp(s_j - m) /
// l), out = bf16(sum_j p_j v_j); fp32 steps only (--fmad=false). The key axis is cut into partitions of kPart
// absolute positions; m and l come from per-partition (max, sum exp) merged in partition order, and each
// partition's sum p_j v_j (keys in position order) is added in partition order. Partitions depend only on
// absolute key positions, never on the rows in the call, so prompt and decode rows get the same bits (I1,
// I2).
#include <algorithm>
#include <vector>

#include "cuda/bf16.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

constexpr int kPart = 64;
constexpr int kThreads = 128;
constexpr int kLanes = 16;
constexpr int kMaxSegments = 16;
constexpr int64_t kMaxChunkRows = 65535;
constexpr size_t kScratchCap = size_t{256} << 20;

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
  float2* stats;   // [rows, heads, span]: (max, sum exp(s - max)) per partition
  float* partial;  // [rows, heads, span, head_dim]: sum p_j v_j per partition
  bool vector;     // 16-byte aligned key rows
  int segment_count;
  SegmentEntry segments[kMaxSegments];
};

struct RowKeys {
  SegmentEntry segment;
  int64_t position;
  int64_t first;  // the row's first visible key position
  int64_t parts;  // partitions from first / kPart to position / kPart
};

__device__ RowKeys row_keys(const Params& params, int64_t r) {
  int s = 0;
  while (s + 1 < params.segment_count && r >= params.segments[s + 1].first_row) ++s;
  RowKeys row;
  row.segment = params.segments[s];
  row.position = params.positions[r];
  row.first = params.window > 0 ? max(int64_t{0}, row.position - params.window + 1) : 0;
  row.parts = row.position / kPart - row.first / kPart + 1;
  return row;
}

__device__ __forceinline__ const uint16_t* cache_row(const uint16_t* cache, const RowKeys& row, int kv_heads,
                                                     int kv_head, int head_dim, int64_t position) {
  return cache + ((position % row.segment.capacity) * kv_heads + kv_head) * static_cast<int64_t>(head_dim);
}

// The CPU backend's dot order: element k to lane k % 16, sequential per lane, then a tree of 8, 4, 2, 1.
// kVector reads the key 16 bytes at a time (same values, same order).
template <bool kVector>
__device__ float dot_lanes(const float* q, const uint16_t* key, int dim) {
  float lanes[kLanes];
#pragma unroll
  for (int l = 0; l < kLanes; ++l) lanes[l] = 0.0f;
  int k = 0;
  for (; k + kLanes <= dim; k += kLanes) {
    if constexpr (kVector) {
      const uint4 low = *reinterpret_cast<const uint4*>(key + k),
                  high = *reinterpret_cast<const uint4*>(key + k + 8);
      const float* qk = q + k;
      lanes[0] = lanes[0] + qk[0] * __uint_as_float(low.x << 16);
      lanes[1] = lanes[1] + qk[1] * __uint_as_float(low.x & 0xffff0000u);
      lanes[2] = lanes[2] + qk[2] * __uint_as_float(low.y << 16);
      lanes[3] = lanes[3] + qk[3] * __uint_as_float(low.y & 0xffff0000u);
      lanes[4] = lanes[4] + qk[4] * __uint_as_float(low.z << 16);
      lanes[5] = lanes[5] + qk[5] * __uint_as_float(low.z & 0xffff0000u);
      lanes[6] = lanes[6] + qk[6] * __uint_as_float(low.w << 16);
      lanes[7] = lanes[7] + qk[7] * __uint_as_float(low.w & 0xffff0000u);
      lanes[8] = lanes[8] + qk[8] * __uint_as_float(high.x << 16);
      lanes[9] = lanes[9] + qk[9] * __uint_as_float(high.x & 0xffff0000u);
      lanes[10] = lanes[10] + qk[10] * __uint_as_float(high.y << 16);
      lanes[11] = lanes[11] + qk[11] * __uint_as_float(high.y & 0xffff0000u);
      lanes[12] = lanes[12] + qk[12] * __uint_as_float(high.z << 16);
      lanes[13] = lanes[13] + qk[13] * __uint_as_float(high.z & 0xffff0000u);
      lanes[14] = lanes[14] + qk[14] * __uint_as_float(high.w << 16);
      lanes[15] = lanes[15] + qk[15] * __uint_as_float(high.w & 0xffff0000u);
    } else {
#pragma unroll
      for (int l = 0; l < kLanes; ++l) lanes[l] = lanes[l] + q[k + l] * bf16_value(key[k + l]);
    }
  }
#pragma unroll
  for (int l = 0; l < kLanes; ++l)
    if (k + l < dim) lanes[l] = lanes[l] + q[k + l] * bf16_value(key[k + l]);
#pragma unroll
  for (int l = 0; l < 8; ++l) lanes[l] = lanes[l] + lanes[l + 8];
#pragma unroll
  for (int l = 0; l < 4; ++l) lanes[l] = lanes[l] + lanes[l + 4];
  lanes[0] = lanes[0] + lanes[2];
  lanes[1] = lanes[1] + lanes[3];
  return lanes[0] + lanes[1];
}

// Loads the row's group of query heads as fp32 into shared memory, finds each key's and value's cache row
// once (rows[j], rows[kPart + j]) and scores the partition's keys: scores[h * kPart + j] for key position
// base + j (only visible keys are written).
__device__ void score_partition(const Params& params, const RowKeys& row, int64_t r, int kv_head,
                                int64_t base, int64_t lo, int64_t hi, float* q_shared, float* scores,
                                const uint16_t** rows) {
  const int dim = params.head_dim;
  const uint16_t* q = params.q + r * params.q_stride + static_cast<int64_t>(kv_head) * params.group * dim;
  for (int i = threadIdx.x; i < params.group * dim; i += kThreads) q_shared[i] = bf16_value(q[i]);
  const int j = threadIdx.x % kPart;
  const int64_t position = base + j;
  const bool visible = position >= lo && position <= hi;
  if (visible && threadIdx.x < kPart) {
    rows[j] = cache_row(row.segment.keys, row, params.kv_heads, kv_head, dim, position);
    rows[kPart + j] = cache_row(row.segment.values, row, params.kv_heads, kv_head, dim, position);
  }
  __syncthreads();
  if (!visible) return;
  const uint16_t* key = rows[j];
  for (int h = threadIdx.x / kPart; h < params.group; h += kThreads / kPart)
    scores[h * kPart + j] = params.scale * (params.vector ? dot_lanes<true>(q_shared + h * dim, key, dim)
                                                          : dot_lanes<false>(q_shared + h * dim, key, dim));
}

struct Partition {
  int64_t r, base, lo, hi;
  int kv_head, jrel;
  bool live;
};

__device__ Partition partition_of(const Params& params, const RowKeys& row) {
  Partition part;
  part.r = blockIdx.z;
  part.kv_head = blockIdx.y;
  part.jrel = blockIdx.x;
  part.live = part.jrel < row.parts;
  part.base = (row.first / kPart + part.jrel) * kPart;
  part.lo = max(part.base, row.first);
  part.hi = min(part.base + kPart - 1, row.position);
  return part;
}

__global__ void stats_kernel(Params params) {
  extern __shared__ float shared[];
  __shared__ const uint16_t* rows[2 * kPart];
  const RowKeys row = row_keys(params, blockIdx.z);
  const Partition part = partition_of(params, row);
  if (!part.live) return;
  float* scores = shared + params.group * params.head_dim;
  score_partition(params, row, part.r, part.kv_head, part.base, part.lo, part.hi, shared, scores, rows);
  __syncthreads();
  for (int h = threadIdx.x; h < params.group; h += kThreads) {
    const float* s = scores + h * kPart;
    float top = -INFINITY;
    for (int64_t p = part.lo; p <= part.hi; ++p) top = top < s[p - part.base] ? s[p - part.base] : top;
    float total = 0.0f;
    for (int64_t p = part.lo; p <= part.hi; ++p) total = total + expf(s[p - part.base] - top);
    const int64_t head = static_cast<int64_t>(part.kv_head) * params.group + h;
    params.stats[(part.r * params.heads + head) * params.span + part.jrel] = make_float2(top, total);
  }
}

__global__ void values_kernel(Params params) {
  extern __shared__ float shared[];
  __shared__ float head_max[128], head_sum[128];
  __shared__ const uint16_t* rows[2 * kPart];
  const RowKeys row = row_keys(params, blockIdx.z);
  const Partition part = partition_of(params, row);
  if (!part.live) return;
  const int dim = params.head_dim;
  float* scores = shared + params.group * dim;
  score_partition(params, row, part.r, part.kv_head, part.base, part.lo, part.hi, shared, scores, rows);
  for (int h = threadIdx.x; h < params.group; h += kThreads) {
    const int64_t head = static_cast<int64_t>(part.kv_head) * params.group + h;
    const float2* stats = params.stats + (part.r * params.heads + head) * params.span;
    float top = -INFINITY;
    for (int64_t j = 0; j < row.parts; ++j) top = top < stats[j].x ? stats[j].x : top;
    float total = 0.0f;
    for (int64_t j = 0; j < row.parts; ++j) total = total + stats[j].y * expf(stats[j].x - top);
    head_max[h] = top;
    head_sum[h] = total;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < params.group * kPart; i += kThreads) {
    const int h = i / kPart;
    const int64_t position = part.base + i % kPart;
    if (position >= part.lo && position <= part.hi)
      scores[i] = round_bf16(expf(scores[i] - head_max[h]) / head_sum[h]);
  }
  __syncthreads();
  // Four outputs per pass keep four independent sums in flight; each still adds its keys in position order.
  const int outputs = params.group * dim;
  const int64_t head0 = static_cast<int64_t>(part.kv_head) * params.group;
  for (int first = threadIdx.x; first < outputs; first += 4 * kThreads) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int head[4], d[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int o = min(first + i * kThreads, outputs - 1);
      head[i] = o / dim;
      d[i] = o % dim;
    }
    for (int64_t p = part.lo; p <= part.hi; ++p) {
      const int j = static_cast<int>(p - part.base);
      const uint16_t* value = rows[kPart + j];
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] = acc[i] + scores[head[i] * kPart + j] * bf16_value(value[d[i]]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (first + i * kThreads < outputs)
        params.partial[((part.r * params.heads + head0 + head[i]) * params.span + part.jrel) * dim + d[i]] =
            acc[i];
  }
}

__global__ void merge_kernel(Params params) {
  const int64_t r = blockIdx.y;
  const int head = blockIdx.x;
  const RowKeys row = row_keys(params, r);
  const float* partial = params.partial + (r * params.heads + head) * params.span * params.head_dim;
  uint16_t* out = params.out + r * params.out_stride + static_cast<int64_t>(head) * params.head_dim;
  for (int d = threadIdx.x; d < params.head_dim; d += kThreads) {
    float total = partial[d];
    for (int64_t j = 1; j < row.parts; ++j) total = total + partial[j * params.head_dim + d];
    out[d] = bf16_bits(total);
  }
}

// Partitions a row can span: every position below `end` for a global layer, the window for a sliding one.
int span_for(int64_t end, int64_t window) {
  int64_t span = std::max<int64_t>(1, (end - 1) / kPart + 1);
  if (window > 0) span = std::min(span, (window - 1 + kPart - 1) / kPart + 1);
  return static_cast<int>(span);
}

size_t bytes_per_row(const AttentionArgs& launch, int span) {
  return static_cast<size_t>(launch.heads) * span * (launch.head_dim * sizeof(float) + sizeof(float2));
}

int64_t max_end(const AttentionArgs& launch) {
  int64_t end = 1;
  for (int64_t s = 0; s < launch.segment_count; ++s) end = std::max(end, launch.segments[s].end);
  return end;
}

cudaError_t run_chunk(Params& params, cudaStream_t stream) {
  const size_t shared = static_cast<size_t>(params.group) * (params.head_dim + kPart) * sizeof(float);
  for (auto kernel : {stats_kernel, values_kernel}) {
    const cudaError_t code =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (code != cudaSuccess) return code;
  }
  const dim3 grid(params.span, params.kv_heads, static_cast<unsigned>(params.rows));
  stats_kernel<<<grid, kThreads, shared, stream>>>(params);
  values_kernel<<<grid, kThreads, shared, stream>>>(params);
  merge_kernel<<<dim3(params.heads, static_cast<unsigned>(params.rows)), kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace

size_t attention_scratch_minimum(const AttentionArgs& launch) {
  return bytes_per_row(launch, span_for(max_end(launch), launch.window));
}

size_t attention_scratch_bytes(const AttentionArgs& launch) {
  const size_t row_bytes = attention_scratch_minimum(launch);
  return std::max(row_bytes, std::min(kScratchCap, row_bytes * static_cast<size_t>(launch.rows)));
}

cudaError_t launch_attention(const AttentionArgs& launch, void* scratch, size_t scratch_bytes,
                             cudaStream_t stream) {
  if (launch.rows == 0) return cudaSuccess;
  if (launch.heads / launch.kv_heads > 128) return cudaErrorInvalidValue;
  const int span = span_for(max_end(launch), launch.window);
  const int64_t chunk_limit =
      std::min<int64_t>(kMaxChunkRows, std::max<size_t>(1, scratch_bytes / bytes_per_row(launch, span)));
  Params params{};
  params.heads = static_cast<int>(launch.heads);
  params.kv_heads = static_cast<int>(launch.kv_heads);
  params.group = params.heads / params.kv_heads;
  params.head_dim = static_cast<int>(launch.head_dim);
  params.window = launch.window;
  params.scale = launch.scale;
  params.span = span;
  params.vector = launch.head_dim % 8 == 0;
  for (int64_t s = 0; s < launch.segment_count; ++s)
    params.vector = params.vector && reinterpret_cast<uintptr_t>(launch.segments[s].keys) % 16 == 0;
  params.stats = static_cast<float2*>(scratch);
  params.partial = reinterpret_cast<float*>(
      static_cast<char*>(scratch) + static_cast<size_t>(chunk_limit) * launch.heads * span * sizeof(float2));
  int64_t segment = 0, segment_row = 0;  // the next row to place: segment index and row within it
  while (segment < launch.segment_count) {
    const int64_t chunk_first = launch.segments[segment].first_row + segment_row;
    params.segment_count = 0;
    params.rows = 0;
    while (segment < launch.segment_count && params.rows < chunk_limit &&
           params.segment_count < kMaxSegments) {
      const AttentionSegmentArgs& source = launch.segments[segment];
      const int64_t take = std::min(source.rows - segment_row, chunk_limit - params.rows);
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
    if (params.rows == 0) continue;
    params.q = launch.q + chunk_first * launch.q_stride;
    params.q_stride = launch.q_stride;
    params.positions = launch.positions + chunk_first;
    params.out = launch.out + chunk_first * launch.out_stride;
    params.out_stride = launch.out_stride;
    const cudaError_t code = run_chunk(params, stream);
    if (code != cudaSuccess) return code;
  }
  return cudaSuccess;
}

}  // namespace plumb::cuda
