// Row gathers: embed_rows out[r] = bf16(table_row(ids[r]) * bf16(scale)) with an affine row bf16(s * q + b)
// (s * q is exact in fp32, so one rounding of the sum); kv_write copies each row into its segment's cache at
// slot = position % capacity.
// Also the argmax (lowest index of the largest value, NaN skipped) and the probe kernel.
#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/kv_segments.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void probe_kernel() {}

__device__ __forceinline__ uint32_t affine_code(const uint32_t* row, int64_t j, int bits) {
  const int64_t bit = j * bits;
  const int64_t word = bit >> 5;
  const int shift = static_cast<int>(bit & 31);
  uint64_t window = row[word] >> shift;
  if (shift + bits > 32) window |= static_cast<uint64_t>(row[word + 1]) << (32 - shift);
  return static_cast<uint32_t>(window & ((1u << bits) - 1u));
}

__device__ __forceinline__ float table_value(const WeightArgs& table, int64_t id, int64_t k) {
  if (!table.affine) return bf16_value(static_cast<const uint16_t*>(table.dense)[id * table.in + k]);
  const int64_t groups = table.in / table.group;
  const int64_t group = id * groups + k / table.group;
  const uint32_t* row = table.packed + id * (table.in * table.bits / 32);
  const float code = static_cast<float>(affine_code(row, k, table.bits));
  return round_bf16(bf16_value(table.scales[group]) * code + bf16_value(table.biases[group]));
}

__global__ void embed_kernel(EmbedArgs launch) {
  wait_for_previous_kernel();
  const int64_t k = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  const int64_t r = blockIdx.x;
  if (k >= launch.table.in) return;
  const float value = table_value(launch.table, launch.ids[r], k);
  launch.out[r * launch.out_stride + k] = bf16_bits(value * launch.scale);
}

// Segments per kv_write kernel: the table rides in the kernel parameters, within the classic 4 KiB.
constexpr int kKvSegments = 64;

struct KvWriteParams {
  const int32_t* positions;
  const uint16_t* keys;
  int64_t keys_stride;
  const uint16_t* values;
  int64_t values_stride;
  int64_t row_elements;
  int segment_count;
  KvSegmentEntry segments[kKvSegments];
};
static_assert(sizeof(KvWriteParams) <= 4096, "kv_write's kernel parameters exceed 4 KiB");

// One block per (row, strip of kThreads elements); the row's cache is its segment's, found by bisection.
__global__ void kv_write_kernel(KvWriteParams params) {
  wait_for_previous_kernel();
  const int64_t k = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  const int64_t r = blockIdx.x;
  if (k >= params.row_elements) return;
  const KvSegmentEntry& segment = segment_of_row(params.segments, params.segment_count, r);
  const int64_t slot = params.positions[r] % segment.capacity;
  segment.cache_keys[slot * params.row_elements + k] = params.keys[r * params.keys_stride + k];
  segment.cache_values[slot * params.row_elements + k] = params.values[r * params.values_stride + k];
}

struct Best {
  float value;
  int32_t index;  // -1: nothing seen yet (every value so far NaN)
};

__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.index < 0) return a;
  if (a.index < 0) return b;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

constexpr int kArgmaxThreads = 1024;

__global__ void argmax_kernel(ArgmaxArgs launch) {
  wait_for_previous_kernel();
  __shared__ Best warp_best[kArgmaxThreads / 32];
  const int64_t r = blockIdx.x;
  Best best{0.0f, -1};
  for (int64_t k = threadIdx.x; k < launch.width; k += kArgmaxThreads) {
    const int64_t at = r * launch.x_stride + k;
    const float value = launch.x_f32 ? static_cast<const float*>(launch.x)[at]
                                     : bf16_value(static_cast<const uint16_t*>(launch.x)[at]);
    if (!isnan(value) && (best.index < 0 || value > best.value)) best = Best{value, static_cast<int32_t>(k)};
  }
  for (int offset = 16; offset >= 1; offset /= 2) {
    const Best other{__shfl_down_sync(0xffffffffu, best.value, offset),
                     __shfl_down_sync(0xffffffffu, best.index, offset)};
    best = better(best, other);
  }
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    Best total = warp_best[0];
    for (int w = 1; w < kArgmaxThreads / 32; ++w) total = better(total, warp_best[w]);
    launch.out[r] = total.index < 0 ? 0 : total.index;
  }
}

}  // namespace

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, probe_kernel);
}

cudaError_t launch_embed_rows(const EmbedArgs& launch, cudaStream_t stream) {
  if (launch.rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(launch.rows), blocks_for(launch.table.in, kThreads));
  launch_dependent(embed_kernel, grid, kThreads, 0, stream, launch);
  return cudaGetLastError();
}

// Segments with rows go kKvSegments to a kernel, each kernel the rows of its segments in order.
cudaError_t launch_kv_write(const KvWriteArgs& launch, cudaStream_t stream) {
  KvWriteParams params{};
  params.row_elements = launch.kv_heads * launch.head_dim;
  params.keys_stride = launch.keys_stride;
  params.values_stride = launch.values_stride;
  int64_t segment = 0;
  while (segment < launch.segment_count) {
    int64_t first = -1, rows = 0;  // the kernel's first row in the launch, and its row count
    params.segment_count = 0;
    for (; segment < launch.segment_count && params.segment_count < kKvSegments; ++segment) {
      const KvWriteSegmentArgs& source = launch.segments[segment];
      if (source.rows == 0) continue;
      if (first < 0) first = source.first_row;
      params.segments[params.segment_count++] = {source.first_row - first, source.cache_keys,
                                                 source.cache_values, source.capacity};
      rows += source.rows;
    }
    if (rows == 0) continue;
    params.positions = launch.positions + first;
    params.keys = launch.keys + first * launch.keys_stride;
    params.values = launch.values + first * launch.values_stride;
    const dim3 grid(static_cast<unsigned>(rows), blocks_for(params.row_elements, kThreads));
    launch_dependent(kv_write_kernel, grid, kThreads, 0, stream, params);
    if (const cudaError_t code = cudaGetLastError(); code != cudaSuccess) return code;
  }
  return cudaSuccess;
}

cudaError_t launch_argmax(const ArgmaxArgs& launch, cudaStream_t stream) {
  if (launch.rows == 0) return cudaSuccess;
  launch_dependent(argmax_kernel, static_cast<unsigned>(launch.rows), kArgmaxThreads, 0, stream, launch);
  return cudaGetLastError();
}

}  // namespace plumb::cuda
