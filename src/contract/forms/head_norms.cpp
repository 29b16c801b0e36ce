// Forms of head_norms: norm_rope's ranges for q and k, rms_norm's for the weightless values, at Gemma 4's
// sliding layers (values from their own projection) and global layers (values from the raw keys).
#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/registry.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

class HeadNormsForm final : public Form {
 public:
  HeadNormsForm(std::string name, int64_t heads, int64_t kv_heads, const ops::RopeSpec& rope,
                bool values_from_keys)
      : Form("head_norms", std::move(name),
             fmt::format("q [rows, {}, {}], k [rows, {}, {}], values from {}, theta {}, rotary {}", heads,
                         rope.head_dim, kv_heads, rope.head_dim, values_from_keys ? "the keys" : "v",
                         rope.theta, rope.partial_rotary_factor)),
        heads_(heads),
        kv_heads_(kv_heads),
        dim_(rope.head_dim),
        values_from_keys_(values_from_keys),
        rope_(rope),
        inv_freq_(ops::rope_inv_freq(rope)) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs, Inputs::extremes};
  }

  // Inputs q, k, v (the keys again where the values come from them), q_weight, k_weight, positions.
  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    const Shape q_shape{request.rows, heads_, dim_}, kv_shape{request.rows, kv_heads_, dim_};
    const auto rows_of = [&](int64_t heads) {
      return activations(request.inputs, rng, request.rows, heads * dim_, 3.0);
    };
    call.inputs.push_back(bf16_data("q", q_shape, rows_of(heads_), true));
    call.inputs.push_back(bf16_data("k", kv_shape, rows_of(kv_heads_), true));
    call.inputs.push_back(bf16_data("v", kv_shape, rows_of(kv_heads_), true));
    Rng shared(request.shared_seed);
    for (const char* name : {"q_weight", "k_weight"})
      call.inputs.push_back(bf16_data(name, {dim_}, norm_weight(shared, dim_), false));
    call.inputs.push_back(i32_data("positions", {request.rows}, rope_positions(request), true));
    call.outputs.push_back(HostData::zeros("q_out", DType::bf16, q_shape, true));
    call.outputs.push_back(HostData::zeros("k_out", DType::bf16, kv_shape, true));
    call.outputs.push_back(HostData::zeros("v_out", DType::bf16, kv_shape, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    const TensorView& values = values_from_keys_ ? in[1] : in[2];
    return ops::head_norms(backend, in[0], in[3], in[1], in[4], values, in[5], rope_, kRmsEps, out[0], out[1],
                           out[2]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const HostData& positions = call.inputs[5];
    const HostData& values = call.inputs[values_from_keys_ ? 1 : 2];
    std::vector<Span> v_out;
    for (int64_t offset = 0; offset < values.elements(); offset += dim_)
      for (const Span& value : rms_norm_vector(values, offset, dim_, nullptr, kRmsEps))
        v_out.push_back(bf16(value));
    return {norm_rope_spans(call.inputs[0], heads_, dim_, &call.inputs[3], positions, inv_freq_),
            norm_rope_spans(call.inputs[1], kv_heads_, dim_, &call.inputs[4], positions, inv_freq_), v_out};
  }

 private:
  int64_t heads_, kv_heads_, dim_;
  bool values_from_keys_;
  ops::RopeSpec rope_;
  std::vector<float> inv_freq_;
};

}  // namespace

void register_head_norms_forms(Registry& registry) {
  for (const ModelShape& model : {kGemma12b, kGemma31b}) {
    const std::string m = model.name;
    const ops::RopeSpec sliding{10000.0, model.sliding_head_dim, 1.0, 1.0};
    const ops::RopeSpec global{1000000.0, model.global_head_dim, 0.25, 1.0};
    registry.forms.push_back(std::make_unique<HeadNormsForm>("head_norms/" + m + "-sliding", model.heads,
                                                             model.sliding_kv_heads, sliding, false));
    registry.forms.push_back(std::make_unique<HeadNormsForm>("head_norms/" + m + "-global", model.heads,
                                                             model.global_kv_heads, global, true));
  }
}

}  // namespace plumb::contract::forms
