#pragma once
// Converts the ops launch structs (validated by the op entries) into the kernels' plain argument structs.
#include <vector>

#include "cuda/kernel_args.hpp"
#include "ops/backend.hpp"

namespace plumb::cuda {

inline WeightArgs weight_args(const ops::WeightLaunch& w) {
  const DenseKind kind = w.dense_dtype == DType::f32   ? DenseKind::f32
                         : w.dense_dtype == DType::f16 ? DenseKind::f16
                                                       : DenseKind::bf16;
  return {w.affine, kind,    w.dense, w.packed, w.scales,       w.biases,
          w.bits,   w.group, w.out,   w.in,     w.decode_layout};
}

inline EmbedArgs embed_args(const ops::EmbedLaunch& l) {
  return {l.ids, weight_args(l.table), l.scale, l.out, l.out_stride, l.rows};
}

inline RmsNormArgs norm_args(const ops::RmsNormLaunch& l) {
  return {l.x, l.x_stride, l.weight, l.out, l.out_stride, l.rows, l.heads, l.dim, l.eps};
}

inline ResidualNormArgs residual_norm_args(const ops::ResidualNormLaunch& l) {
  return {norm_args(l.post), l.h,      l.h_stride, l.h_out,
          l.h_out_stride,    l.scaled, l.factor,   norm_args(l.next_norm)};
}

inline NormRopeArgs norm_rope_args(const ops::NormRopeLaunch& l) {
  return {norm_args(l.norm), l.positions, l.inv_freq};
}

inline HeadNormsArgs head_norms_args(const ops::HeadNormsLaunch& l) {
  return {norm_args(l.v), norm_rope_args(l.q), norm_rope_args(l.k)};
}

// `segments` receives the converted segment table, which the returned struct points into.
inline KvWriteArgs kv_write_args(const ops::KvWriteLaunch& l, std::vector<KvWriteSegmentArgs>& segments) {
  segments.clear();
  for (int64_t s = 0; s < l.segment_count; ++s) {
    const ops::KvWriteSegmentLaunch& g = l.segments[s];
    segments.push_back({g.first_row, g.rows, g.cache_keys, g.cache_values, g.capacity});
  }
  return {segments.data(), l.segment_count, l.positions, l.keys,     l.keys_stride,
          l.values,        l.values_stride, l.rows,      l.kv_heads, l.head_dim};
}

// `segments` receives the converted segment table, which the returned struct points into.
inline AttentionArgs attention_args(const ops::AttentionLaunch& l,
                                    std::vector<AttentionSegmentArgs>& segments) {
  segments.clear();
  for (int64_t s = 0; s < l.segment_count; ++s) {
    const ops::AttentionSegmentLaunch& g = l.segments[s];
    segments.push_back({g.first_row, g.rows, g.keys, g.values, g.capacity, g.end});
  }
  return {l.q,    l.q_stride, l.positions, segments.data(), l.segment_count, l.out,  l.out_stride,
          l.rows, l.heads,    l.kv_heads,  l.head_dim,      l.window,        l.scale};
}

inline MatmulArgs matmul_args(const ops::MatmulLaunch& l) {
  return {l.x, l.x_stride, weight_args(l.weight), l.out, l.out_dtype == DType::f32, l.out_stride, l.rows};
}

inline RowsArgs rows_args(const ops::RowsLaunch& l) {
  return {l.a,          l.a_stride, l.b,     l.b_stride, l.out, l.out_dtype == DType::f32,
          l.out_stride, l.rows,     l.width, l.factor};
}

inline ArgmaxArgs argmax_args(const ops::ArgmaxLaunch& l) {
  return {l.x, l.x_dtype == DType::f32, l.x_stride, l.out, l.rows, l.width};
}

inline SampleArgs sample_args(const ops::SampleLaunch& l) {
  return {l.x, l.x_dtype == DType::f32, l.x_stride, l.params, nullptr, nullptr, l.out, l.rows, l.width};
}

}  // namespace plumb::cuda
