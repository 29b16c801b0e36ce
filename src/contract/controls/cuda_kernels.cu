// The CUDA controls' kernels: each the op's expression with one planted fault, one thread per output element
// (or per vector), built with --fmad=false like the backend's kernels.
#include <cuda_fp16.h>

#include "contract/controls/cuda_kernels.hpp"
#include "cuda/gelu.cuh"
#include "cuda/k_matmul_decode.cuh"

namespace plumb::contract::controls {
namespace {

constexpr int kThreads = 256;

__device__ float bf16_value(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

// Round to nearest even; NaN stays a quiet NaN.
__device__ uint16_t bf16_bits(float value) {
  const uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

__device__ float round_bf16(float value) {
  return bf16_value(bf16_bits(value));
}

__global__ void write_one_kernel(uint16_t* element) {
  *element = 0;
}

__global__ void soft_cap_kernel(const uint16_t* x, int64_t x_stride, void* out, bool out_f32,
                                int64_t out_stride, int64_t rows, int64_t width, float cap) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * width) return;
  const int64_t r = item / width, k = item % width;
  const float value = tanhf(round_bf16(bf16_value(x[r * x_stride + k]) / cap)) * cap;
  if (out_f32)
    static_cast<float*>(out)[r * out_stride + k] = round_bf16(value);
  else
    static_cast<uint16_t*>(out)[r * out_stride + k] = bf16_bits(value);
}

__global__ void geglu_kernel(const uint16_t* gate, int64_t gate_stride, const uint16_t* up, int64_t up_stride,
                             uint16_t* out, int64_t out_stride, int64_t rows, int64_t width) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * width) return;
  const int64_t r = item / width, k = item % width;
  const float g = bf16_value(gate[r * gate_stride + k]), u = bf16_value(up[r * up_stride + k]);
  out[r * out_stride + k] = bf16_bits(cuda::gelu_tanh(g) * u);  // the backend's gelu, left unrounded
}

// matmul_geglu's stores from fp32 sums: gate and up rounded to bf16, and out = geglu of the unrounded gate.
__global__ void geglu_f32_gate_kernel(const float* gate, const float* up, int64_t sums_stride,
                                      uint16_t* gate_out, int64_t gate_stride, uint16_t* up_out,
                                      int64_t up_stride, uint16_t* out, int64_t out_stride, int64_t rows,
                                      int64_t width) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * width) return;
  const int64_t r = item / width, k = item % width;
  const float g = gate[r * sums_stride + k], u = round_bf16(up[r * sums_stride + k]);
  gate_out[r * gate_stride + k] = bf16_bits(g);
  up_out[r * up_stride + k] = bf16_bits(u);
  out[r * out_stride + k] = bf16_bits(cuda::geglu_value(g, u));  // the backend's value, of a gate unrounded
}

__global__ void scale_truncating_kernel(const uint16_t* x, int64_t x_stride, uint16_t* out,
                                        int64_t out_stride, int64_t rows, int64_t width, float factor) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * width) return;
  const int64_t r = item / width, k = item % width;
  const float product = bf16_value(x[r * x_stride + k]) * factor;
  out[r * out_stride + k] = static_cast<uint16_t>(__float_as_uint(product) >> 16);
}

__global__ void rms_norm_kernel(const uint16_t* x, int64_t x_stride, const uint16_t* weight, uint16_t* out,
                                int64_t out_stride, int64_t rows, int64_t heads, int64_t dim, float eps) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * heads) return;
  const int64_t r = item / heads, h = item % heads;
  const uint16_t* row = x + r * x_stride + h * dim;
  float sum = 0.0f;
  for (int64_t k = 0; k < dim; ++k) sum += bf16_value(row[k]) * bf16_value(row[k]);
  const float inverse = rsqrtf(sum / static_cast<float>(dim) + eps);
  uint16_t* target = out + r * out_stride + h * dim;
  for (int64_t k = 0; k < dim; ++k) {
    const float normed = round_bf16(bf16_value(row[k]) * inverse);
    target[k] = bf16_bits(weight != nullptr ? normed * bf16_value(weight[k]) : normed);
  }
}

__global__ void matmul_kernel(const uint16_t* x, int64_t x_stride, const uint16_t* weight, uint16_t* out,
                              int64_t out_stride, int64_t rows, int64_t out_features, int64_t in_features) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * out_features) return;
  const int64_t r = item / out_features, o = item % out_features;
  float sum = 0.0f;
  for (int64_t k = 0; k < in_features; ++k) {
    const float w = __half2float(__ushort_as_half(weight[o * in_features + k]));
    sum = round_bf16(sum + bf16_value(x[r * x_stride + k]) * w);
  }
  out[r * out_stride + o] = bf16_bits(sum);
}

// out = bf16(sum over k from the last to the first of x * w) in fp32, for a bf16 weight: a sum in another
// order than the tensor cores' ascending k16 steps.
__global__ void matmul_descending_kernel(const uint16_t* x, int64_t x_stride, const uint16_t* weight,
                                         uint16_t* out, int64_t out_stride, int64_t rows,
                                         int64_t out_features, int64_t in_features) {
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= rows * out_features) return;
  const int64_t r = item / out_features, o = item % out_features;
  float sum = 0.0f;
  for (int64_t k = in_features - 1; k >= 0; --k)
    sum = sum + bf16_value(x[r * x_stride + k]) * bf16_value(weight[o * in_features + k]);
  out[r * out_stride + o] = bf16_bits(sum);
}

unsigned blocks(int64_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

__global__ void shift_positions_kernel(const ops::SampleParams* in, ops::SampleParams* out, int64_t rows,
                                       int64_t shift) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= rows) return;
  ops::SampleParams params = in[r];
  params.position += shift;
  out[r] = params;
}

// Swaps the nibbles of each code word's two halves of a k16 step (b0's codes with b1's) in every record.
__global__ void swap_code_pairs_kernel(char* records, int record_bytes, int code_words, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  auto* word = reinterpret_cast<uint32_t*>(records + i / code_words * record_bytes) + i % code_words;
  *word = (*word & 0x0f0f0f0fu) << 4 | (*word >> 4 & 0x0f0f0f0fu);
}

// One thread a slice: every record's run of subnormal tiles counts every tile from it on, whatever their
// forms (the low byte, the tile's own form, is kept).
__global__ void unbreak_runs_kernel(char* records, int record_bytes, int form_at, int64_t slices,
                                    int64_t tiles) {
  const int64_t slice = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (slice >= slices) return;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    auto* form = reinterpret_cast<uint32_t*>(records + (slice * tiles + tile) * record_bytes + form_at);
    *form = (*form & 0xffu) | static_cast<uint32_t>(tiles - tile) << cuda::matmul::kSubnormalRunShift;
  }
}

}  // namespace

cudaError_t cuda_unbreak_subnormal_runs(void* layout, int64_t out_features, int64_t in_features, int group,
                                        cudaStream_t stream) {
  const cuda::matmul::LaneLayout shape = cuda::matmul::lane_layout(out_features, in_features, group);
  if (shape.slices * shape.tiles == 0) return cudaSuccess;
  unbreak_runs_kernel<<<blocks(shape.slices), kThreads, 0, stream>>>(
      static_cast<char*>(layout), shape.record_bytes(), shape.form_at(), shape.slices, shape.tiles);
  return cudaGetLastError();
}

cudaError_t cuda_swap_layout_code_pairs(void* layout, int64_t out_features, int64_t in_features, int group,
                                        cudaStream_t stream) {
  const cuda::matmul::LaneLayout shape = cuda::matmul::lane_layout(out_features, in_features, group);
  const int code_words = shape.codes_bytes() / 4;
  const int64_t count = shape.slices * shape.tiles * code_words;
  if (count == 0) return cudaSuccess;
  swap_code_pairs_kernel<<<blocks(count), kThreads, 0, stream>>>(static_cast<char*>(layout),
                                                                 shape.record_bytes(), code_words, count);
  return cudaGetLastError();
}

cudaError_t cuda_write_one(uint16_t* element, cudaStream_t stream) {
  write_one_kernel<<<1, 1, 0, stream>>>(element);
  return cudaGetLastError();
}

cudaError_t cuda_soft_cap_tanh_unrounded(const uint16_t* x, int64_t x_stride, void* out, bool out_f32,
                                         int64_t out_stride, int64_t rows, int64_t width, float cap,
                                         cudaStream_t stream) {
  if (rows * width == 0) return cudaSuccess;
  soft_cap_kernel<<<blocks(rows * width), kThreads, 0, stream>>>(x, x_stride, out, out_f32, out_stride, rows,
                                                                 width, cap);
  return cudaGetLastError();
}

cudaError_t cuda_geglu_gelu_unrounded(const uint16_t* gate, int64_t gate_stride, const uint16_t* up,
                                      int64_t up_stride, uint16_t* out, int64_t out_stride, int64_t rows,
                                      int64_t width, cudaStream_t stream) {
  if (rows * width == 0) return cudaSuccess;
  geglu_kernel<<<blocks(rows * width), kThreads, 0, stream>>>(gate, gate_stride, up, up_stride, out,
                                                              out_stride, rows, width);
  return cudaGetLastError();
}

cudaError_t cuda_geglu_f32_gate(const float* gate, const float* up, int64_t sums_stride, uint16_t* gate_out,
                                int64_t gate_stride, uint16_t* up_out, int64_t up_stride, uint16_t* out,
                                int64_t out_stride, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows * width == 0) return cudaSuccess;
  geglu_f32_gate_kernel<<<blocks(rows * width), kThreads, 0, stream>>>(
      gate, up, sums_stride, gate_out, gate_stride, up_out, up_stride, out, out_stride, rows, width);
  return cudaGetLastError();
}

cudaError_t cuda_scale_truncating(const uint16_t* x, int64_t x_stride, uint16_t* out, int64_t out_stride,
                                  int64_t rows, int64_t width, float factor, cudaStream_t stream) {
  if (rows * width == 0) return cudaSuccess;
  scale_truncating_kernel<<<blocks(rows * width), kThreads, 0, stream>>>(x, x_stride, out, out_stride, rows,
                                                                         width, factor);
  return cudaGetLastError();
}

cudaError_t cuda_rms_norm_round_normalized(const uint16_t* x, int64_t x_stride, const uint16_t* weight,
                                           uint16_t* out, int64_t out_stride, int64_t rows, int64_t heads,
                                           int64_t dim, float eps, cudaStream_t stream) {
  if (rows * heads == 0) return cudaSuccess;
  rms_norm_kernel<<<blocks(rows * heads), kThreads, 0, stream>>>(x, x_stride, weight, out, out_stride, rows,
                                                                 heads, dim, eps);
  return cudaGetLastError();
}

cudaError_t cuda_matmul_f16_bf16_accumulator(const uint16_t* x, int64_t x_stride, const uint16_t* weight_f16,
                                             uint16_t* out, int64_t out_stride, int64_t rows,
                                             int64_t out_features, int64_t in_features, cudaStream_t stream) {
  if (rows * out_features == 0) return cudaSuccess;
  matmul_kernel<<<blocks(rows * out_features), kThreads, 0, stream>>>(
      x, x_stride, weight_f16, out, out_stride, rows, out_features, in_features);
  return cudaGetLastError();
}

cudaError_t cuda_matmul_bf16_descending(const uint16_t* x, int64_t x_stride, const uint16_t* weight,
                                        uint16_t* out, int64_t out_stride, int64_t rows, int64_t out_features,
                                        int64_t in_features, cudaStream_t stream) {
  if (rows * out_features == 0) return cudaSuccess;
  matmul_descending_kernel<<<blocks(rows * out_features), kThreads, 0, stream>>>(
      x, x_stride, weight, out, out_stride, rows, out_features, in_features);
  return cudaGetLastError();
}

cudaError_t cuda_shift_draw_positions(const ops::SampleParams* in, ops::SampleParams* out, int64_t rows,
                                      int64_t shift, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  shift_positions_kernel<<<blocks(rows), kThreads, 0, stream>>>(in, out, rows, shift);
  return cudaGetLastError();
}

}  // namespace plumb::contract::controls
