#pragma once
// Entry points of the CUDA controls' kernels (cuda_kernels.cu): plain pointers and sizes, queued on `stream`.
#include <cstdint>

#include <cuda_runtime.h>

#include "ops/keyed_draw.hpp"

namespace plumb::contract::controls {

// Writes one bf16 zero at `element` (a place the launch must not touch).
cudaError_t cuda_write_one(uint16_t* element, cudaStream_t stream);

// out = bf16(tanh(bf16(x / cap)) * cap): the soft cap without its rounding of tanh; out bf16 or f32.
cudaError_t cuda_soft_cap_tanh_unrounded(const uint16_t* x, int64_t x_stride, void* out, bool out_f32,
                                         int64_t out_stride, int64_t rows, int64_t width, float cap,
                                         cudaStream_t stream);

// out = bf16(gelu_tanh(gate) * up): geglu without its rounding of the activation (HF rounds it to bf16).
cudaError_t cuda_geglu_gelu_unrounded(const uint16_t* gate, int64_t gate_stride, const uint16_t* up,
                                      int64_t up_stride, uint16_t* out, int64_t out_stride, int64_t rows,
                                      int64_t width, cudaStream_t stream);

// matmul_geglu's stores from the fp32 sums of gate and up ([rows, width], row stride sums_stride): gate and
// up as bf16, and out = bf16(bf16(gelu_tanh(gate)) * bf16(up)) from the gate sum before its rounding.
cudaError_t cuda_geglu_f32_gate(const float* gate, const float* up, int64_t sums_stride, uint16_t* gate_out,
                                int64_t gate_stride, uint16_t* up_out, int64_t up_stride, uint16_t* out,
                                int64_t out_stride, int64_t rows, int64_t width, cudaStream_t stream);

// out = x * factor cut to bf16 by dropping the low 16 bits (toward zero) instead of rounding to nearest even.
cudaError_t cuda_scale_truncating(const uint16_t* x, int64_t x_stride, uint16_t* out, int64_t out_stride,
                                  int64_t rows, int64_t width, float factor, cudaStream_t stream);

// out = bf16(bf16(x * rsqrt(mean(x^2) + eps)) * w) per vector of `dim` (MLX's extra rounding point).
cudaError_t cuda_rms_norm_round_normalized(const uint16_t* x, int64_t x_stride, const uint16_t* weight,
                                           uint16_t* out, int64_t out_stride, int64_t rows, int64_t heads,
                                           int64_t dim, float eps, cudaStream_t stream);

// out = x * W^T for a dense f16 weight, with the running sum rounded to bf16 after every product.
cudaError_t cuda_matmul_f16_bf16_accumulator(const uint16_t* x, int64_t x_stride, const uint16_t* weight_f16,
                                             uint16_t* out, int64_t out_stride, int64_t rows,
                                             int64_t out_features, int64_t in_features, cudaStream_t stream);

// out = bf16(fp32 sum of x * w over k from the last to the first), bf16 weight [out_features, in_features].
cudaError_t cuda_matmul_bf16_descending(const uint16_t* x, int64_t x_stride, const uint16_t* weight,
                                        uint16_t* out, int64_t out_stride, int64_t rows, int64_t out_features,
                                        int64_t in_features, cudaStream_t stream);

// In a 4-bit weight's decode layout (k_matmul_decode_lanes.cu), swaps every lane's codes of the two halves of
// each k16 step: the decode kernel then multiplies k 2t, 2t + 1 by x at k 2t + 8, 2t + 9 and back.
cudaError_t cuda_swap_layout_code_pairs(void* layout, int64_t out_features, int64_t in_features, int group,
                                        cudaStream_t stream);

// In a 4-bit weight's decode layout, marks every record's run of subnormal tiles as reaching the end of k,
// whatever the forms of the tiles after it: the decode kernel then takes the subnormal loop over tiles that
// need the packed or f32 form.
cudaError_t cuda_unbreak_subnormal_runs(void* layout, int64_t out_features, int64_t in_features, int group,
                                        cudaStream_t stream);

// out[r] = in[r] with position + shift: draw options keyed by another position than the op was given.
cudaError_t cuda_shift_draw_positions(const ops::SampleParams* in, ops::SampleParams* out, int64_t rows,
                                      int64_t shift, cudaStream_t stream);

}  // namespace plumb::contract::controls
