// Row-wise kernels. Each names the HF expression it reproduces; every product of two bf16 values is exact in
// fp32, so the only fp32 freedom is in sums, rsqrt, cos/sin, tanh and exp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "core/half.hpp"
#include "cpu/kernels.hpp"
#include "ops/affine.hpp"

namespace plumb::cpu {

void weight_row_f32(const ops::WeightLaunch& weight, int64_t o, float* out) {
  if (weight.affine) {
    const int64_t words = ops::affine_row_words(weight.in, weight.bits);
    const int64_t groups = weight.in / weight.group;
    ops::affine_dequantize_row(weight.packed + o * words, weight.scales + o * groups,
                               weight.biases + o * groups, weight.in, weight.bits, weight.group, out);
    return;
  }
  if (weight.dense_dtype == DType::f32) {
    std::memcpy(out, static_cast<const float*>(weight.dense) + o * weight.in,
                static_cast<size_t>(weight.in) * 4);
    return;
  }
  const uint16_t* row = static_cast<const uint16_t*>(weight.dense) + o * weight.in;
  if (weight.dense_dtype == DType::f16) {
    for (int64_t k = 0; k < weight.in; ++k) out[k] = f16_to_f32(row[k]);
  } else {
    bf16_row_to_f32(row, weight.in, out);
  }
}

// out[r] = bf16(table_row(ids[r]) * bf16(scale)), HF's embed(ids) * embed_scale.to(bf16).
void embed_rows(ThreadPool& pool, const ops::EmbedLaunch& launch) {
  pool.parallel_for(launch.rows, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(launch.table.in));
    for (int64_t r = begin; r < end; ++r) {
      weight_row_f32(launch.table, launch.ids[r], row.data());
      uint16_t* out = launch.out + r * launch.out_stride;
      for (int64_t k = 0; k < launch.table.in; ++k) out[k] = f32_to_bf16(row[k] * launch.scale);
    }
  });
}

namespace {

// HF Gemma4RMSNorm in fp32: normed = x * pow(mean(x^2) + eps, -0.5), times w when weighted.
void norm_vector(const uint16_t* x, const uint16_t* weight, int64_t dim, float eps, float* normed) {
  bf16_row_to_f32(x, dim, normed);
  const float mean = dot_f32(normed, normed, dim) / static_cast<float>(dim);
  const float inverse = 1.0f / std::sqrt(mean + eps);
  for (int64_t k = 0; k < dim; ++k) normed[k] = normed[k] * inverse;
  if (weight != nullptr)
    for (int64_t k = 0; k < dim; ++k) normed[k] = normed[k] * bf16_to_f32(weight[k]);
}

// HF apply_rotary_pos_emb in bf16 ops: bf16(bf16(n * cos) + bf16(rotate_half(n) * sin)), cos and sin bf16.
void rope_vector(const float* normed_bf16, const float* inv_freq, int32_t position, int64_t dim,
                 uint16_t* out) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float theta = static_cast<float>(position) * inv_freq[i];
    const float cosine = round_bf16(std::cos(theta));
    const float sine = round_bf16(std::sin(theta));
    const float first = normed_bf16[i];
    const float second = normed_bf16[i + half];
    out[i] = f32_to_bf16(round_bf16(first * cosine) + round_bf16(-second * sine));
    out[i + half] = f32_to_bf16(round_bf16(second * cosine) + round_bf16(first * sine));
  }
}

}  // namespace

void rms_norm(ThreadPool& pool, const ops::RmsNormLaunch& launch) {
  pool.parallel_for(launch.rows * launch.heads, [&](int64_t begin, int64_t end) {
    std::vector<float> normed(static_cast<size_t>(launch.dim));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / launch.heads, h = item % launch.heads;
      norm_vector(launch.x + r * launch.x_stride + h * launch.dim, launch.weight, launch.dim, launch.eps,
                  normed.data());
      uint16_t* out = launch.out + r * launch.out_stride + h * launch.dim;
      for (int64_t k = 0; k < launch.dim; ++k) out[k] = f32_to_bf16(normed[k]);
    }
  });
}

void norm_rope(ThreadPool& pool, const ops::NormRopeLaunch& launch) {
  const ops::RmsNormLaunch& norm = launch.norm;
  pool.parallel_for(norm.rows * norm.heads, [&](int64_t begin, int64_t end) {
    std::vector<float> normed(static_cast<size_t>(norm.dim));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / norm.heads, h = item % norm.heads;
      norm_vector(norm.x + r * norm.x_stride + h * norm.dim, norm.weight, norm.dim, norm.eps, normed.data());
      for (float& value : normed) value = round_bf16(value);
      rope_vector(normed.data(), launch.inv_freq, launch.positions[r], norm.dim,
                  norm.out + r * norm.out_stride + h * norm.dim);
    }
  });
}

void kv_write(ThreadPool& pool, const ops::KvWriteLaunch& launch) {
  const int64_t row_elements = launch.kv_heads * launch.head_dim;
  const auto row_bytes = static_cast<size_t>(row_elements) * sizeof(uint16_t);
  const std::span<const ops::KvWriteSegmentLaunch> segments(launch.segments,
                                                            static_cast<size_t>(launch.segment_count));
  pool.parallel_for(launch.rows, [&](int64_t begin, int64_t end) {
    // The segment holding row `begin`: the last whose first row is not after it.
    auto segment = std::upper_bound(segments.begin(), segments.end(), begin,
                                    [](int64_t row, const auto& s) { return row < s.first_row; }) -
                   1;
    for (int64_t r = begin; r < end; ++r) {
      while (r >= segment->first_row + segment->rows) ++segment;
      const int64_t slot = launch.positions[r] % segment->capacity;
      std::memcpy(segment->cache_keys + slot * row_elements, launch.keys + r * launch.keys_stride, row_bytes);
      std::memcpy(segment->cache_values + slot * row_elements, launch.values + r * launch.values_stride,
                  row_bytes);
    }
  });
}

}  // namespace plumb::cpu
