// Forms of matmul_group: Gemma 4's projections of one x (q, k and v of a sliding layer; q and k of a global
// one), each member's outputs the ranges of its own matmul. CUDA groups affine calls of up to 32 rows and
// bf16 calls of 17 to 32 (the 24-row batches), and runs 130 rows as one matmul per member, so gate 2 compares
// the grouped rows with the plain ones.
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "contract/forms/matmul_weights.hpp"
#include "contract/registry.hpp"

namespace plumb::contract::forms {
namespace {

class MatmulGroupForm final : public Form {
 public:
  MatmulGroupForm(std::string name, std::vector<WeightSpec> specs)
      : Form("matmul_group", std::move(name), describe(specs)),
        specs_(std::move(specs)),
        weights_(specs_.size()) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs};
    if (specs_.front().affine()) stresses.push_back(Inputs::fractions);
    batch_rows = {1, 3, 8, 24, 130};
    shape_rows = 2;
  }

  // Inputs x, then each member's weight tensors; an output per member.
  Call make_call(const CallRequest& request) const override {
    Call call = empty_call(request);
    const int64_t in = specs_.front().in;
    call.inputs.push_back(matmul_x(request, in));
    for (size_t i = 0; i < specs_.size(); ++i) {
      for (HostData tensor : weights_[i].get(specs_[i], mix_seed(request.shared_seed, i), request.inputs)) {
        tensor.name = fmt::format("members[{}].{}", i, tensor.name);
        call.inputs.push_back(std::move(tensor));
      }
      call.outputs.push_back(HostData::zeros(fmt::format("members[{}].out", i), DType::bf16,
                                             {request.rows, specs_[i].out}, true));
    }
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    std::vector<PreparedWeight> weights;
    size_t next = 1;
    for (const WeightSpec& spec : specs_) {
      const size_t tensors = spec.affine() ? 3 : 1;
      auto weight = prepared_weight_from(backend, spec, in.subspan(next, tensors));
      if (!weight.ok()) return weight.error();
      weights.push_back(std::move(*weight));
      next += tensors;
    }
    std::vector<ops::MatmulMember> members;
    for (size_t i = 0; i < specs_.size(); ++i) members.push_back({&weights[i].weight, out[i]});
    return ops::matmul_group(backend, in[0], members);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<std::vector<Span>> outputs;
    size_t next = 1;
    for (const WeightSpec& spec : specs_) {
      const size_t tensors = spec.affine() ? 3 : 1;
      outputs.push_back(
          matmul_spans(spec, call.inputs[0], std::span(call.inputs).subspan(next, tensors), DType::bf16));
      next += tensors;
    }
    return outputs;
  }

 private:
  static std::string describe(const std::vector<WeightSpec>& specs) {
    std::string text = fmt::format("[rows, {}] x", specs.front().in);
    for (const WeightSpec& spec : specs) text += fmt::format(" [{}, {}] {}", spec.out, spec.in, spec.text());
    return text;
  }

  std::vector<WeightSpec> specs_;
  std::vector<WeightCache> weights_;  // one per member
};

}  // namespace

void register_matmul_group_forms(Registry& registry) {
  auto& forms = registry.forms;
  // Gemma 4 12B: a sliding layer's q, k and v in bf16; a global layer's q and k (its keys are its values) in
  // 4-bit g64, which take CUDA's decode kernel up to 32 rows.
  forms.push_back(std::make_unique<MatmulGroupForm>(
      "matmul_group/12b-qkv-sliding", std::vector<WeightSpec>{{4096, 3840}, {2048, 3840}, {2048, 3840}}));
  forms.push_back(std::make_unique<MatmulGroupForm>(
      "matmul_group/12b-qk-global-4bit-g64",
      std::vector<WeightSpec>{{8192, 3840, DType::bf16, 4, 64}, {512, 3840, DType::bf16, 4, 64}}));
}

}  // namespace plumb::contract::forms
