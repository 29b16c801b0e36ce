// Forms of the element-wise row ops (geglu, add, scale, soft_cap) and argmax, with their ranges.
#include <cmath>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/registry.hpp"
#include "core/half.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

enum class RowOp { geglu, add, scale, soft_cap };

class RowForm final : public Form {
 public:
  RowForm(RowOp op, std::string name, int64_t width, DType out_dtype, float factor)
      : Form(op_name(op), std::move(name),
             fmt::format("[rows, {}] -> {}{}", width, dtype_name(out_dtype),
                         factor != 0.0f ? fmt::format(", factor {}", factor) : std::string())),
        op_(op),
        width_(width),
        out_dtype_(out_dtype),
        factor_(factor) {
    stresses = {Inputs::extremes};
    if (op == RowOp::add) stresses.push_back(Inputs::cancel_pairs);
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    const Shape shape{request.rows, width_};
    // soft_cap sees logits around the cap; the others hidden-state magnitudes.
    const double scale = op_ == RowOp::soft_cap ? 40.0 : 2.0;
    call.inputs.push_back(
        bf16_data("x", shape, activations(request.inputs, rng, request.rows, width_, scale), true));
    if (op_ == RowOp::geglu || op_ == RowOp::add)
      call.inputs.push_back(
          bf16_data("y", shape, activations(request.inputs, rng, request.rows, width_, scale), true));
    call.outputs.push_back(HostData::zeros("out", out_dtype_, shape, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    switch (op_) {
      case RowOp::geglu:
        return ops::geglu(backend, in[0], in[1], out[0]);
      case RowOp::add:
        return ops::add(backend, in[0], in[1], out[0]);
      case RowOp::scale:
        return ops::scale(backend, in[0], factor_, out[0]);
      case RowOp::soft_cap:
        return ops::soft_cap(backend, in[0], factor_, out[0]);
    }
    return {};
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const HostData& x = call.inputs[0];
    std::vector<Span> out(static_cast<size_t>(x.elements()));
    for (int64_t i = 0; i < x.elements(); ++i) out[static_cast<size_t>(i)] = element(call, i);
    return {out};
  }

 private:
  static std::string op_name(RowOp op) {
    switch (op) {
      case RowOp::geglu:
        return "geglu";
      case RowOp::add:
        return "add";
      case RowOp::scale:
        return "scale";
      case RowOp::soft_cap:
        return "soft_cap";
    }
    return "?";
  }

  Span element(const Call& call, int64_t i) const {
    const Span x = exact_at(call.inputs[0], i);
    switch (op_) {
      case RowOp::geglu:
        return geglu_span(x, exact_at(call.inputs[1], i));
      case RowOp::add:
        return bf16(f32_add(x, exact_at(call.inputs[1], i)));
      case RowOp::scale:
        return bf16(f32_mul(x, Span::exact(round_bf16_value(factor_))));
      case RowOp::soft_cap: {
        const Span cap = Span::exact(factor_);
        return bf16(f32_mul(bf16(f32_tanh(bf16(f32_div(x, cap)))), cap));
      }
    }
    return Span::open_range(0.0);
  }

  RowOp op_;
  int64_t width_;
  DType out_dtype_;
  float factor_;
};

// argmax: the lowest index of the row's largest value; NaN skipped; an all-NaN row gives 0. Exact.
class ArgmaxForm final : public Form {
 public:
  ArgmaxForm(std::string name, int64_t width, DType in_dtype)
      : Form("argmax", std::move(name), fmt::format("[rows, {}] {} -> i32", width, dtype_name(in_dtype))),
        width_(width),
        in_dtype_(in_dtype) {
    batch_rows = {1, 2, 5};
    stresses = {Inputs::ties, Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    call.inputs.push_back(
        logit_rows(request.inputs, rng, request.rows, width_, in_dtype_,
                   [&](Rng& r, std::vector<uint16_t>& values) { plant_ties(r, request.rows, values); }));
    call.outputs.push_back(HostData::zeros("index", DType::i32, {request.rows}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::argmax(backend, in[0], out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const HostData& x = call.inputs[0];
    std::vector<Span> out;
    for (int64_t r = 0; r < call.rows; ++r) {
      int64_t best = 0;
      double best_value = std::nan("");
      for (int64_t k = 0; k < width_; ++k) {
        const double value = x.value(r * width_ + k);
        if (!std::isnan(value) && (std::isnan(best_value) || value > best_value)) {
          best_value = value;
          best = k;
        }
      }
      out.push_back(Span::exact(static_cast<double>(best)));
    }
    return {out};
  }

 private:
  // Ties of the row maximum at several places and NaN scattered in (logit_rows adds the all-NaN row).
  void plant_ties(Rng& rng, int64_t rows, std::vector<uint16_t>& values) const {
    for (int64_t r = 0; r < rows; ++r) {
      uint16_t* row = values.data() + r * width_;
      for (int t = 0; t < 4; ++t) row[rng.integer(0, width_ - 1)] = f32_to_bf16(7.0f);
      for (int t = 0; t < 64; ++t) row[rng.integer(0, width_ - 1)] = 0x7fc1;
      row[0] = 0xff80;  // -inf first: the max lies further on
    }
  }

  int64_t width_;
  DType in_dtype_;
};

}  // namespace

void register_row_forms(Registry& registry) {
  auto& forms = registry.forms;
  for (const ModelShape& model : {kGemma12b, kGemma31b}) {
    const std::string m = model.name;
    forms.push_back(std::make_unique<RowForm>(RowOp::geglu, "geglu/" + m + "-mlp", model.intermediate,
                                              DType::bf16, 0.0f));
    forms.push_back(
        std::make_unique<RowForm>(RowOp::add, "add/" + m + "-residual", model.hidden, DType::bf16, 0.0f));
    // A per-layer scalar well away from 1 (the checkpoints' are small).
    forms.push_back(std::make_unique<RowForm>(RowOp::scale, "scale/" + m + "-layer-scalar", model.hidden,
                                              DType::bf16, 0.0869140625f));
  }
  forms.push_back(
      std::make_unique<RowForm>(RowOp::soft_cap, "soft_cap/logits-bf16", kVocab, DType::bf16, 30.0f));
  forms.push_back(
      std::make_unique<RowForm>(RowOp::soft_cap, "soft_cap/logits-f32", kVocab, DType::f32, 30.0f));
  forms.push_back(std::make_unique<ArgmaxForm>("argmax/logits-bf16", kVocab, DType::bf16));
  forms.push_back(std::make_unique<ArgmaxForm>("argmax/logits-f32", kVocab, DType::f32));
  for (auto& form : forms)
    if (form->op() == "soft_cap") form->batch_rows = {1, 2, 5};
}

}  // namespace plumb::contract::forms
