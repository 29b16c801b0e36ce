// Forms of matmul_residual_norm: a block's last projection (o or down, a slice of its input width) into the
// full hidden row, then the sandwich residual and the next norm. o's range is the matmul's; h_out's and
// next's are residual_norm's over it. CUDA runs the norms in the matmul's K-split reduce at bf16 decode rows
// (the 1-, 2-, 5-, 16- and 24-row batches, a cluster a row on sm_90, with PLUMB_CUDA_UNCHECKED=1 until a GPU
// run has checked it) and after the matmul's reduce for 80, so gate 2 compares the two.
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/forms/matmul_weights.hpp"
#include "contract/registry.hpp"

namespace plumb::contract::forms {
namespace {

class MatmulResidualNormForm final : public Form {
 public:
  MatmulResidualNormForm(std::string name, int64_t in, std::optional<float> factor)
      : Form("matmul_residual_norm", std::move(name),
             fmt::format("[rows, {}] x [{}, {}] bf16, then residual_norm [rows, {}], eps 1e-6, {}", in,
                         kGemma12b.hidden, in, kGemma12b.hidden,
                         factor ? fmt::format("layer scalar {}", *factor) : std::string("no scalar"))),
        spec_{kGemma12b.hidden, in},
        factor_(factor) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs};
    batch_rows = {1, 2, 5, 16, 24, 80};
    shape_rows = 2;
  }

  // Inputs x, the weight, h, post_weight, next_weight; outputs o, h_out, next.
  Call make_call(const CallRequest& request) const override {
    const int64_t dim = spec_.out;
    Call call = empty_call(request);
    call.inputs.push_back(matmul_x(request, spec_.in));
    for (const HostData& tensor : weights_.get(spec_, request.shared_seed, request.inputs))
      call.inputs.push_back(tensor);
    Rng rng(request.seed);
    call.inputs.push_back(
        bf16_data("h", {request.rows, dim}, activations(request.inputs, rng, request.rows, dim, 3.0), true));
    Rng shared(request.shared_seed);
    for (const char* name : {"post_weight", "next_weight"})
      call.inputs.push_back(bf16_data(name, {dim}, norm_weight(shared, dim), false));
    for (const char* name : {"o", "h_out", "next"})
      call.outputs.push_back(HostData::zeros(name, DType::bf16, {request.rows, dim}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    auto weight = prepared_weight_from(backend, spec_, in.subspan(1, 1));
    if (!weight.ok()) return weight.error();
    return ops::matmul_residual_norm(backend, in[0], weight->weight,
                                     {in[2], out[0], in[3], factor_, in[4], kRmsEps, out[1], out[2]});
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const auto inputs = std::span(call.inputs);
    const int64_t dim = spec_.out;
    const std::vector<Span> o = matmul_spans(spec_, inputs[0], inputs.subspan(1, 1), DType::bf16);
    const HostData& h = call.inputs[2];
    std::vector<Span> h_out, next;
    for (int64_t offset = 0; offset < call.rows * dim; offset += dim)
      append_residual_norm_row(
          h, offset,
          rms_norm_spans(std::span(o).subspan(static_cast<size_t>(offset), static_cast<size_t>(dim)),
                         &call.inputs[3], kRmsEps),
          factor_, call.inputs[4], h_out, next);
    return {o, h_out, next};
  }

 private:
  WeightSpec spec_;
  std::optional<float> factor_;  // bf16-representable
  WeightCache weights_;
};

}  // namespace

void register_matmul_residual_norm_forms(Registry& registry) {
  // 12B's o (a quarter of the heads' outputs) and down (a sixteenth of the intermediate width) into the
  // hidden row: their K splits run across blocks at decode rows, as the full widths' do.
  const int64_t o_in = kGemma12b.heads / 4 * kGemma12b.sliding_head_dim;
  registry.forms.push_back(std::make_unique<MatmulResidualNormForm>(
      "matmul_residual_norm/12b-attention-slice", o_in, std::nullopt));
  registry.forms.push_back(std::make_unique<MatmulResidualNormForm>(
      "matmul_residual_norm/12b-mlp-slice", kGemma12b.intermediate / 16, kLayerScalar));
}

}  // namespace plumb::contract::forms
