// Controls for matmul, matmul_group, matmul_geglu, matmul_head_norms and embed_rows.
#include <utility>
#include <vector>

#include "contract/controls/common.hpp"
#include "contract/parallel.hpp"
#include "contract/registry.hpp"
#include "ops/affine.hpp"

namespace plumb::contract::controls {
namespace {

enum class MatmulFault { bf16_accumulator, split_by_rows, affine_unrounded, f32_out_rounded };

// Weight row o as fp32; `rounded` false keeps the affine value s * q + b in fp32.
void weight_row(const ops::WeightLaunch& weight, int64_t o, bool rounded, std::vector<float>& row) {
  row.resize(static_cast<size_t>(weight.in));
  if (!weight.affine) {
    for (int64_t k = 0; k < weight.in; ++k) {
      const auto* dense = static_cast<const uint8_t*>(weight.dense);
      const int64_t at = o * weight.in + k;
      if (weight.dense_dtype == DType::f32) row[k] = reinterpret_cast<const float*>(dense)[at];
      if (weight.dense_dtype == DType::bf16)
        row[k] = bf16_to_f32(reinterpret_cast<const uint16_t*>(dense)[at]);
      if (weight.dense_dtype == DType::f16) row[k] = f16_to_f32(reinterpret_cast<const uint16_t*>(dense)[at]);
    }
    return;
  }
  const int64_t words = ops::affine_row_words(weight.in, weight.bits), groups = weight.in / weight.group;
  for (int64_t k = 0; k < weight.in; ++k) {
    const int64_t g = o * groups + k / weight.group;
    const uint32_t code = ops::affine_code(weight.packed + o * words, k, weight.bits);
    const float value =
        bf16_to_f32(weight.scales[g]) * static_cast<float>(code) + bf16_to_f32(weight.biases[g]);
    row[k] = rounded ? round_bf16(value) : value;
  }
}

template <MatmulFault fault>
class MatmulFaulty final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void matmul(const ops::MatmulLaunch& launch) override {
    parallel_indices(launch.weight.out, [&](int64_t o) {  // each output column by one thread, in full
      thread_local std::vector<float> row;
      weight_row(launch.weight, o, fault != MatmulFault::affine_unrounded, row);
      for (int64_t r = 0; r < launch.rows; ++r) {
        const float sum = dot(launch.x + r * launch.x_stride, row, launch.rows);
        if (launch.out_dtype == DType::f32)
          static_cast<float*>(launch.out)[r * launch.out_stride + o] =
              fault == MatmulFault::f32_out_rounded ? round_bf16(sum) : sum;
        else
          static_cast<uint16_t*>(launch.out)[r * launch.out_stride + o] = f32_to_bf16(sum);
      }
    });
  }

 private:
  static float dot(const uint16_t* x, const std::vector<float>& w, int64_t rows) {
    const auto n = static_cast<int64_t>(w.size());
    // Batches of four rows or more split K in two and keep the partial sums in bf16.
    if (fault == MatmulFault::split_by_rows && rows >= 4) {
      float low = 0.0f, high = 0.0f;
      for (int64_t k = 0; k < n / 2; ++k) low += bf16_to_f32(x[k]) * w[static_cast<size_t>(k)];
      for (int64_t k = n / 2; k < n; ++k) high += bf16_to_f32(x[k]) * w[static_cast<size_t>(k)];
      return round_bf16(low) + round_bf16(high);
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      sum += bf16_to_f32(x[k]) * w[static_cast<size_t>(k)];
      if (fault == MatmulFault::bf16_accumulator) sum = round_bf16(sum);
    }
    return sum;
  }
};

template <bool affine_unrounded>
class EmbedFaulty final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void embed_rows(const ops::EmbedLaunch& launch) override {
    std::vector<float> row;
    for (int64_t r = 0; r < launch.rows; ++r) {
      weight_row(launch.table, launch.ids[r], !affine_unrounded, row);
      for (int64_t k = 0; k < launch.table.in; ++k) {
        const float value = row[static_cast<size_t>(k)] * launch.scale;
        launch.out[r * launch.out_stride + k] = f32_to_bf16(affine_unrounded ? value : truncate_bf16(value));
      }
    }
  }
};

// A grouped launch whose block ranges leave out the last member (its outputs never written).
class MatmulGroupDropsLast final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void matmul_group(const ops::MatmulGroupLaunch& launch) override {
    real().matmul_group({launch.members.first(launch.members.size() - 1)});
  }
};

// matmul_geglu whose geglu takes up as the gate: out = geglu(up, gate) (a fused reduce that mixes up its two
// members' sums).
class MatmulGegluUpAsGate final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void matmul_geglu(const ops::MatmulGegluLaunch& launch) override {
    real().matmul_geglu(launch);
    ops::RowsLaunch swapped = launch.geglu;
    std::swap(swapped.a, swapped.b);
    std::swap(swapped.a_stride, swapped.b_stride);
    real().geglu(swapped);
  }
};

// matmul_head_norms whose values are normed from the keys' rows instead of v's (a fused reduce that reads
// another member's sums).
class MatmulHeadNormsValuesFromKeys final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void matmul_head_norms(const ops::MatmulHeadNormsLaunch& launch) override {
    ops::MatmulHeadNormsLaunch moved = launch;
    moved.norms.v.x = launch.norms.k.norm.x;
    moved.norms.v.x_stride = launch.norms.k.norm.x_stride;
    real().matmul_head_norms(moved);
  }
};

}  // namespace

void register_matmul_controls(Registry& registry) {
  auto& list = registry.controls;
  list.push_back(planted<MatmulFaulty<MatmulFault::bf16_accumulator>>(
      "matmul/bf16-accumulator", "matmul/12b-k-global-f16", Gate::stress, "rounds the running sum to bf16"));
  list.push_back(planted<MatmulFaulty<MatmulFault::split_by_rows>>(
      "matmul/split-by-rows", "matmul/12b-k-global-8bit-g128", Gate::invariant,
      "splits K for batches of four rows or more and keeps the two partial sums in bf16"));
  list.push_back(planted<MatmulFaulty<MatmulFault::affine_unrounded>>(
      "matmul/affine-unrounded", "matmul/31b-k-global-3bit-g64", Gate::stress,
      "keeps the dequantized weight s * q + b in fp32 instead of bf16"));
  list.push_back(planted<MatmulFaulty<MatmulFault::f32_out_rounded>>(
      "matmul/f32-out-rounded", "matmul/12b-head-slice-f32", Gate::shapes, "rounds the f32 logits to bf16"));
  list.push_back(planted<MatmulGroupDropsLast>("matmul_group/last-member-dropped",
                                               "matmul_group/12b-qkv-sliding", Gate::runs,
                                               "launches every member but the last"));
  list.push_back(planted<MatmulGegluUpAsGate>("matmul_geglu/up-as-gate", "matmul_geglu/12b-mlp-slice",
                                              Gate::shapes, "takes up as the gate: out = geglu(up, gate)"));
  list.push_back(planted<MatmulHeadNormsValuesFromKeys>(
      "matmul_head_norms/values-from-keys", "matmul_head_norms/12b-sliding-slice", Gate::shapes,
      "norms the values from the raw keys' rows instead of v's"));
  list.push_back(planted<EmbedFaulty<true>>("embed_rows/affine-unrounded", "embed_rows/12b-affine-8bit-g32",
                                            Gate::shapes,
                                            "keeps the dequantized row in fp32 before the scale"));
  list.push_back(planted<EmbedFaulty<false>>("embed_rows/truncating-bf16", "embed_rows/12b-bf16",
                                             Gate::shapes, "rounds the scaled row to bf16 toward zero"));
}

}  // namespace plumb::contract::controls
