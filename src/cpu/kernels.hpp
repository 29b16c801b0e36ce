#pragma once
// The CPU backend's kernels (fp32 arithmetic at HF's rounding points). Each computes every output element
// from its own inputs in an order fixed by the weight shape or absolute key positions, so threads and row
// counts never change a bit (I1-I4).
#include <cstdint>

#include "core/half.hpp"
#include "cpu/thread_pool.hpp"
#include "ops/backend.hpp"

namespace plumb::cpu {

// Lanes of every fp32 dot product and sum: element k goes to lane k % kLanes, lanes meet in a fixed tree.
inline constexpr int kLanes = 16;

inline float dot_f32(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) lanes[lane] += a[k + lane] * b[k + lane];
  for (int lane = 0; k < n; ++k, ++lane) lanes[lane] += a[k] * b[k];
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int lane = 0; lane < width; ++lane) lanes[lane] += lanes[lane + width];
  return lanes[0];
}

inline void bf16_row_to_f32(const uint16_t* row, int64_t n, float* out) {
  for (int64_t k = 0; k < n; ++k) out[k] = bf16_to_f32(row[k]);
}

// Writes weight row `o` as f32 values (dense converted exactly; affine as bf16(scale * q + bias)).
void weight_row_f32(const ops::WeightLaunch& weight, int64_t o, float* out);

void embed_rows(ThreadPool& pool, const ops::EmbedLaunch& launch);
void rms_norm(ThreadPool& pool, const ops::RmsNormLaunch& launch);
void norm_rope(ThreadPool& pool, const ops::NormRopeLaunch& launch);
void kv_write(ThreadPool& pool, const ops::KvWriteLaunch& launch);
void attention(ThreadPool& pool, const ops::AttentionLaunch& launch);
void matmul(ThreadPool& pool, const ops::MatmulLaunch& launch);
void geglu(ThreadPool& pool, const ops::RowsLaunch& launch);
void add(ThreadPool& pool, const ops::RowsLaunch& launch);
void scale(ThreadPool& pool, const ops::RowsLaunch& launch);
void soft_cap(ThreadPool& pool, const ops::RowsLaunch& launch);
void argmax(ThreadPool& pool, const ops::ArgmaxLaunch& launch);
void sample(ThreadPool& pool, const ops::SampleLaunch& launch);

}  // namespace plumb::cpu
