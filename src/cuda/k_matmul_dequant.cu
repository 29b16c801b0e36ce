// Tall calls of MLX affine weights: the weight dequantized once into scratch as dense bf16, dense[n][k] =
// bf16(scale * q + bias) by the same steps k_matmul.cu's tiles take in shared memory (dequantize_words), then
// multiplied by the bf16 ring (k_matmul_tma.cu). The ring's wgmma steps then read the very values the affine
// tiles would have made, in the same order, so the bits are those of the affine path; the copies cost about
// 4.5 bytes a weight, which calls of a few hundred rows repay (the affine ring dequantizes every stage in its
// consumers, at less than half the bf16 ring's rate). PLUMB_CUDA_DEQUANT_MATMUL=0 turns it off.

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_tiles.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda::matmul {

namespace {

constexpr int kDequantThreads = 256;

// One thread per 32-code half-row (groups of 32 or more never split one).
template <int kBits>
__global__ void __launch_bounds__(kDequantThreads)
    dequantize_kernel(const uint32_t* packed, const uint16_t* scales, const uint16_t* biases, int64_t n,
                      int64_t k, int group, uint16_t* dense) {
  wait_for_previous_kernel();  // the scratch may still be read by the launch before
  const int64_t halves = k / 32, half = static_cast<int64_t>(blockIdx.x) * kDequantThreads + threadIdx.x;
  if (half >= n * halves) return;
  const int64_t row = half / halves, column = half % halves * 32;
  uint32_t words[kBits];
#pragma unroll
  for (int w = 0; w < kBits; ++w) words[w] = packed[row * (k * kBits / 32) + column / 32 * kBits + w];
  const int64_t e = row * (k / group) + column / group;
  uint4* out = reinterpret_cast<uint4*>(dense + row * k + column);
  dequantize_words<kBits>(words, true, bf16_value(scales[e]), bf16_value(biases[e]),
                          [&](int q, uint4 chunk) { out[q] = chunk; });
}

template <int kBits>
cudaError_t run_dequantize(const WeightArgs& weight, uint16_t* dense, cudaStream_t stream) {
  const int64_t halves = weight.out * (weight.in / 32);
  const auto blocks = static_cast<unsigned>((halves + kDequantThreads - 1) / kDequantThreads);
  launch_dependent(dequantize_kernel<kBits>, dim3(blocks), kDequantThreads, 0, stream, weight.packed,
                   weight.scales, weight.biases, weight.out, weight.in, weight.group, dense);
  return cudaGetLastError();
}

bool enabled() {
  static const bool on = env_switch_on("PLUMB_CUDA_DEQUANT_MATMUL");
  return on;
}

}  // namespace

bool dequantize_fits(const WeightArgs& weight, int64_t rows) {
  constexpr int64_t kMinRows = 256;  // below, the extra copies cost more than the affine ring loses
  const bool bits = weight.bits >= 2 && weight.bits <= 8 && weight.bits != 7;
  return weight.affine && bits && rows >= kMinRows && weight.in % 32 == 0 && weight.group % 32 == 0 &&
         enabled();
}

size_t dequantized_bytes(const WeightArgs& weight) {
  return (static_cast<size_t>(weight.out) * weight.in * sizeof(uint16_t) + 255) / 256 * 256;
}

cudaError_t launch_dequantize(const WeightArgs& weight, uint16_t* dense, cudaStream_t stream) {
  return with_bits(weight.bits, [&](auto width) {
    constexpr int kBits = decltype(width)::value;
    if constexpr (kBits == 0)
      return cudaErrorInvalidValue;  // bf16 needs no dequantizing
    else
      return run_dequantize<kBits>(weight, dense, stream);
  });
}

}  // namespace plumb::cuda::matmul
