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

}  // namespace plumb::cuda
