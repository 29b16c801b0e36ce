#pragma once
// Each op's float64 reference, computed at the same bf16 rounding points as the op (HF transformers' points,
// docs/numerics.md). A reference returns the op's output value *before its final rounding*, with every
// earlier rounding point applied; the op's exact output is that value rounded once to its output dtype. Where
// HF's own arithmetic rounds to f32 with no freedom (RoPE angles), the reference rounds there too. Inputs are
// host values: bf16 tensors as doubles that bf16 represents exactly, row-major and contiguous.
#include <cstdint>
#include <span>
#include <vector>

#include "ops/ops.hpp"

namespace plumb::ops::reference {

using Values = std::vector<double>;

// Round to nearest even into bf16 / f32, returned as double (NaN stays NaN, overflow gives infinity).
double round_bf16(double value);
double round_f32(double value);

// A host weight's values [out, in]: dense converted exactly; affine as bf16(f32(scale * q + bias)), with each
// code read bit by bit from the LSB-first stream.
Values weight_values(const Weight& weight);
// A host bf16 tensor's values, in row-major order of its shape (any strides).
Values bf16_values(const TensorView& view);

// row(ids[r]) * bf16(scale); out [rows, hidden].
Values embed_rows(std::span<const int32_t> ids, const Values& table, int64_t hidden, double scale);

// (x * (mean(x^2) + eps)^-1/2) * w over vectors of `dim`; weight empty: weightless.
Values rms_norm(const Values& x, const Values& weight, int64_t dim, double eps);

// bf16(n * c) + bf16(-n2 * s) (and the mirrored half), n = bf16(rms_norm(x)), c/s = bf16(cos/sin(f32(p *
// f))). x: [rows, heads, dim]; inv_freq from rope_inv_freq.
Values norm_rope(const Values& x, const Values& weight, int64_t rows, int64_t heads, int64_t dim, double eps,
                 std::span<const int32_t> positions, std::span<const float> inv_freq);

// sum_j bf16(softmax(s)_j) v_j with s_j = scale * q · k_j over the visible keys. keys, values: [positions,
// kv_heads, dim] indexed by absolute position; q: [rows, heads, dim].
Values attention(const Values& q, int64_t rows, int64_t heads, int64_t kv_heads, int64_t dim,
                 std::span<const int32_t> positions, const Values& keys, const Values& values, int64_t window,
                 double scale);

// x [rows, in] · w [out, in]ᵀ.
Values matmul(const Values& x, const Values& w, int64_t rows, int64_t in, int64_t out);

// bf16(gelu_tanh(gate)) * up.
Values geglu(const Values& gate, const Values& up);
// a + b.
Values add(const Values& a, const Values& b);
// x * bf16(factor).
Values scale(const Values& x, double factor);
// bf16(tanh(bf16(x / cap))) * cap.
Values soft_cap(const Values& x, double cap);
// The lowest index of each row's largest value (NaN skipped; an all-NaN row gives 0).
std::vector<int32_t> argmax(const Values& x, int64_t rows, int64_t width);

}  // namespace plumb::ops::reference
