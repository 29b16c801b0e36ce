// Forms of matmul (bf16, f16, f32 and MLX affine weights) and embed_rows, with their ranges: each output a
// dot product of exact fp32 products accumulated in fp32 in any order; embedding rows exact.
#include <memory>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/forms/matmul_weights.hpp"
#include "contract/registry.hpp"
#include "core/half.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

class MatmulForm final : public Form {
 public:
  MatmulForm(std::string name, WeightSpec spec, DType out_dtype)
      : Form("matmul", std::move(name),
             fmt::format("[rows, {}] x [{}, {}] {} -> {}", spec.in, spec.out, spec.in, spec.text(),
                         dtype_name(out_dtype))),
        spec_(spec),
        out_dtype_(out_dtype) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs};
    if (spec.affine()) stresses.push_back(Inputs::fractions);
    // 130 rows take the backend's prompt path (CUDA: the 128-row wgmma tile), which gate 2 then compares with
    // rows alone and in small batches (mma.sync tiles).
    batch_rows = {1, 3, 8, 130};
    // 260 rows of an affine weight take the dequantize-first path (CUDA: dense bf16 scratch through the
    // ring), which gate 2 compares with the decode kernel's rows; on the smaller weights only, for the CPU's
    // time.
    if (spec.affine() && spec.out * spec.in <= int64_t{2048} * 5376) batch_rows.push_back(260);
    shape_rows = 2;
  }

  Call make_call(const CallRequest& request) const override {
    Call call = empty_call(request);
    call.inputs.push_back(matmul_x(request, spec_.in));
    for (const HostData& tensor : weights_.get(spec_, request.shared_seed, request.inputs))
      call.inputs.push_back(tensor);
    call.outputs.push_back(HostData::zeros("out", out_dtype_, {request.rows, spec_.out}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    auto weight = prepared_weight_from(backend, spec_, in.subspan(1));
    if (!weight.ok()) return weight.error();
    return ops::matmul(backend, in[0], weight->weight, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    return {matmul_spans(spec_, call.inputs[0], std::span(call.inputs).subspan(1), out_dtype_)};
  }

 private:
  WeightSpec spec_;
  DType out_dtype_;
  WeightCache weights_;
};

// embed_rows: out = bf16(row(id) * bf16(scale)), exact. The table is a slice of the vocabulary at the
// model's width; ids reach its last row.
class EmbedForm final : public Form {
 public:
  EmbedForm(std::string name, WeightSpec spec, float scale)
      : Form("embed_rows", std::move(name),
             fmt::format("ids -> [rows, {}], table [{}, {}] {}, scale {}", spec.in, spec.out, spec.in,
                         spec.text(), scale)),
        spec_(spec),
        scale_(scale) {
    stresses = {Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    std::vector<int32_t> ids(static_cast<size_t>(request.rows));
    for (auto& id : ids) id = static_cast<int32_t>(rng.integer(0, spec_.out - 1));
    if (!ids.empty()) ids.back() = static_cast<int32_t>(spec_.out - 1);
    call.inputs.push_back(i32_data("ids", {request.rows}, ids, true));
    std::vector<HostData> table = weights_.get(spec_, request.shared_seed, Inputs::gaussian);
    if (request.inputs == Inputs::extremes) table = extreme_table(request.shared_seed);
    for (HostData& tensor : table) call.inputs.push_back(std::move(tensor));
    call.outputs.push_back(HostData::zeros("out", DType::bf16, {request.rows, spec_.in}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    auto table = weight_from(spec_, in.subspan(1));
    if (!table.ok()) return table.error();
    return ops::embed_rows(backend, in[0], *table, scale_, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const std::vector<float> table = weight_values(spec_, std::span(call.inputs).subspan(1));
    const HostData& ids = call.inputs[0];
    std::vector<Span> out;
    for (int64_t r = 0; r < call.rows; ++r) {
      const auto id = static_cast<int64_t>(ids.value(r));
      for (int64_t k = 0; k < spec_.in; ++k)
        out.push_back(bf16(f32_mul(Span::exact(table[static_cast<size_t>(id * spec_.in + k)]),
                                   Span::exact(round_bf16_value(scale_)))));
    }
    return {out};
  }

 private:
  // Table values (or affine scales and biases) spread over bf16's range, so the scale product overflows
  // to infinity or lands among subnormals; affine ones stay where scale * q + b cannot overflow.
  std::vector<HostData> extreme_table(uint64_t seed) const {
    std::vector<HostData> table = make_weight(spec_, seed, Inputs::gaussian);
    Rng rng(mix_seed(seed, 5));
    for (size_t t = spec_.affine() ? 1 : 0; t < table.size(); ++t)
      store_bf16(extremes_bf16(rng, table[t].elements(), spec_.affine() ? 0x1p100 : 0x1p126), table[t].bytes);
    return table;
  }

  WeightSpec spec_;
  float scale_;
  WeightCache weights_;
};

}  // namespace

void register_matmul_forms(Registry& registry) {
  auto& forms = registry.forms;
  const auto matmul = [&](std::string name, WeightSpec spec, DType out = DType::bf16) {
    forms.push_back(std::make_unique<MatmulForm>("matmul/" + std::move(name), spec, out));
  };
  // Gemma 4 12B: q_proj (sliding), the MLP's gate and down, a global q_proj 4-bit; the tied head's first
  // 4096 vocabulary rows in f32 (the logits a score run keeps).
  matmul("12b-q-sliding", {4096, 3840});
  matmul("12b-mlp-gate", {15360, 3840});
  matmul("12b-mlp-down", {3840, 15360});
  matmul("12b-q-global-4bit-g64", {8192, 3840, DType::bf16, 4, 64});
  matmul("12b-head-slice-f32", {4096, 3840}, DType::f32);
  matmul("12b-k-global-8bit-g128", {512, 3840, DType::bf16, 8, 128});
  matmul("12b-k-sliding-2bit-g32", {2048, 3840, DType::bf16, 2, 32});
  matmul("12b-v-sliding-4bit-g32", {2048, 3840, DType::bf16, 4, 32});
  // Gemma 4 31B: o_proj (sliding) 5-bit, k_proj (global) 3-bit and 6-bit.
  matmul("31b-o-sliding-5bit-g32", {5376, 8192, DType::bf16, 5, 32});
  matmul("31b-k-global-3bit-g64", {2048, 5376, DType::bf16, 3, 64});
  matmul("31b-k-global-6bit-g128", {2048, 5376, DType::bf16, 6, 128});
  // Dense f16 and f32 checkpoints.
  matmul("12b-k-global-f16", {512, 3840, DType::f16});
  matmul("12b-k-global-f32", {512, 3840, DType::f32});
  forms.push_back(std::make_unique<EmbedForm>("embed_rows/12b-bf16", WeightSpec{4096, 3840}, 62.0f));
  forms.push_back(std::make_unique<EmbedForm>("embed_rows/31b-affine-4bit-g64",
                                              WeightSpec{4096, 5376, DType::bf16, 4, 64}, 73.5f));
  forms.push_back(std::make_unique<EmbedForm>("embed_rows/12b-affine-8bit-g32",
                                              WeightSpec{2048, 3840, DType::bf16, 8, 32}, 62.0f));
}

}  // namespace plumb::contract::forms
