// Forms of matmul_geglu: the MLP's gate and up of one x, then geglu of their outputs. Its three outputs are
// checked: gate and up as their own matmuls' ranges, out as geglu's range over those. CUDA adds geglu in the
// splits' reduce up to 32 rows (the decode kernel for affine weights, the tiled kernel's reduce launch for
// bf16) and runs the steps at 130 rows, so gate 2 compares the fused rows with the stepped ones.
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/forms/matmul_weights.hpp"
#include "contract/registry.hpp"

namespace plumb::contract::forms {
namespace {

class MatmulGegluForm final : public Form {
 public:
  MatmulGegluForm(std::string name, WeightSpec spec)
      : Form("matmul_geglu", std::move(name),
             fmt::format("[rows, {}] x [{}, {}] {} twice", spec.in, spec.out, spec.in, spec.text())),
        spec_(spec) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs};
    if (spec_.affine()) stresses.push_back(Inputs::fractions);
    batch_rows = {1, 3, 8, 24, 130};
    shape_rows = 2;
  }

  // Inputs x, then gate's and up's weight tensors; outputs gate, up and out.
  Call make_call(const CallRequest& request) const override {
    Call call = empty_call(request);
    call.inputs.push_back(matmul_x(request, spec_.in));
    for (size_t i = 0; i < 2; ++i)
      for (HostData tensor : weights_[i].get(spec_, mix_seed(request.shared_seed, i), request.inputs)) {
        tensor.name = fmt::format("{}.{}", kMembers[i], tensor.name);
        call.inputs.push_back(std::move(tensor));
      }
    for (const char* name : {"gate", "up", "out"})
      call.outputs.push_back(HostData::zeros(name, DType::bf16, {request.rows, spec_.out}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    auto gate = prepared_weight_from(backend, spec_, in.subspan(1, tensors()));
    if (!gate.ok()) return gate.error();
    auto up = prepared_weight_from(backend, spec_, in.subspan(1 + tensors(), tensors()));
    if (!up.ok()) return up.error();
    return ops::matmul_geglu(backend, in[0], gate->weight, up->weight, out[0], out[1], out[2]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const auto inputs = std::span(call.inputs);
    std::vector<Span> gate = matmul_spans(spec_, inputs[0], inputs.subspan(1, tensors()), DType::bf16);
    std::vector<Span> up =
        matmul_spans(spec_, inputs[0], inputs.subspan(1 + tensors(), tensors()), DType::bf16);
    std::vector<Span> out(gate.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = geglu_span(gate[i], up[i]);
    return {std::move(gate), std::move(up), std::move(out)};
  }

 private:
  static constexpr const char* kMembers[2] = {"gate", "up"};
  size_t tensors() const { return spec_.affine() ? 3 : 1; }

  WeightSpec spec_;
  WeightCache weights_[2];
};

}  // namespace

void register_matmul_geglu_forms(Registry& registry) {
  // Gemma 4 12B's MLP in slices of 2048 of its 15360 columns (the kernels' paths are the full shape's: both
  // split K at decode rows), in bf16 and in 4-bit g64, which take CUDA's decode kernel up to 32 rows.
  registry.forms.push_back(
      std::make_unique<MatmulGegluForm>("matmul_geglu/12b-mlp-slice", WeightSpec{2048, 3840}));
  registry.forms.push_back(std::make_unique<MatmulGegluForm>("matmul_geglu/12b-mlp-slice-4bit-g64",
                                                             WeightSpec{2048, 3840, DType::bf16, 4, 64}));
}

}  // namespace plumb::contract::forms
