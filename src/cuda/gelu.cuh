#pragma once
// PyTorch's gelu(approximate="tanh") in fp32: 0.5 g (1 + tanh(kBeta (g + 0.044715 g^3))), kBeta = sqrt(2) *
// (2 / sqrt(pi)) * 0.5 as an fp32 constant; each step rounds on its own under --fmad=false. Shared by the
// backend's GeGLU (k_rows.cu) and its contract control, so the two differ only in the planted fault.
#include "cuda/bf16.cuh"

namespace plumb::cuda {

__device__ __forceinline__ float gelu_tanh(float gate) {
  constexpr float kBeta = static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
  constexpr float kKappa = 0.044715f;
  const float cube = gate * gate * gate;
  const float inner = kBeta * (gate + kKappa * cube);
  return 0.5f * gate * (1.0f + tanhf(inner));
}

// geglu's value from bf16 gate and up values: bf16(gelu_tanh(gate)) * up, rounded to bf16 by its store. The
// rows kernel and the matmuls' fused reduce (matmul_geglu) both take it, so they round at the same points.
__device__ __forceinline__ float geglu_value(float gate, float up) {
  return round_bf16(gelu_tanh(gate)) * up;
}

// matmul_geglu's three values from gate's and up's fp32 sums (its decode kernel's reduce and
// reduce_geglu_kernel): each rounded once to bf16, and out = geglu of the two as rounded. Callers store out
// last, as out may be gate or up.
struct GegluBits {
  uint16_t gate, up, out;
};

__device__ __forceinline__ GegluBits geglu_bits(float gate_sum, float up_sum) {
  const float gate = round_bf16(gate_sum), up = round_bf16(up_sum);
  return {bf16_bits(gate), bf16_bits(up), bf16_bits(geglu_value(gate, up))};
}

}  // namespace plumb::cuda
