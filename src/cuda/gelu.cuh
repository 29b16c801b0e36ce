#pragma once
// PyTorch's gelu(approximate="tanh") in fp32: 0.5 g (1 + tanh(kBeta (g + 0.044715 g^3))), kBeta = sqrt(2) *
// (2 / sqrt(pi)) * 0.5 as an fp32 constant; each step rounds on its own under --fmad=false. Shared by the
// backend's GeGLU (k_rows.cu) and its contract control, so the two differ only in the planted fault.
namespace plumb::cuda {

__device__ __forceinline__ float gelu_tanh(float gate) {
  constexpr float kBeta = static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
  constexpr float kKappa = 0.044715f;
  const float cube = gate * gate * gate;
  const float inner = kBeta * (gate + kKappa * cube);
  return 0.5f * gate * (1.0f + tanhf(inner));
}

}  // namespace plumb::cuda
