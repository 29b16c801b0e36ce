// Forms of matmul_head_norms: a layer's q, k and v of one x (a global layer's q and k, whose values are the
// raw keys' norm), normed in place with each row's stream writing its cache. Each output's range is
// head_norms' over its matmul's ranges. CUDA runs the norms in the members' K-split reduce at bf16 decode
// rows (the 1-, 2-, 5- and 16-row batches after the members' tiled launches, the 24-row one after the grouped
// tile's) and after the group for 80, so gate 2 compares the two.
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/forms/matmul_weights.hpp"
#include "contract/forms/streams.hpp"
#include "contract/registry.hpp"

namespace plumb::contract::forms {
namespace {

class MatmulHeadNormsForm final : public Form {
 public:
  static constexpr int64_t kStreamSlots = 8;

  // Gemma 4 12B's hidden width and head_dims, with `heads` and `kv_heads` of a layer's heads (slices of the
  // real widths: the kernels' paths at these rows are the full widths').
  MatmulHeadNormsForm(std::string name, int64_t heads, int64_t kv_heads, const ops::RopeSpec& rope,
                      bool values_from_keys)
      : Form("matmul_head_norms", std::move(name),
             fmt::format("[rows, {}] x q [{}, {}], k [{}, {}]{}, head_dim {}, theta {}, rotary {}, into a "
                         "cache [{}, {}, {}] per stream",
                         kGemma12b.hidden, heads * rope.head_dim, kGemma12b.hidden, kv_heads * rope.head_dim,
                         kGemma12b.hidden, values_from_keys ? ", values from the keys" : ", v alike",
                         rope.head_dim, rope.theta, rope.partial_rotary_factor, kStreamSlots, kv_heads,
                         rope.head_dim)),
        heads_(heads),
        kv_heads_(kv_heads),
        dim_(rope.head_dim),
        rope_(rope),
        inv_freq_(ops::rope_inv_freq(rope)),
        streams_{kStreamSlots, kv_heads, rope.head_dim, positions_index(values_from_keys ? 2 : 3)} {
    specs_ = {{heads * dim_, kGemma12b.hidden}, {kv_heads * dim_, kGemma12b.hidden}};
    if (!values_from_keys) specs_.push_back({kv_heads * dim_, kGemma12b.hidden});
    weights_.resize(specs_.size());
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs};
    writes_every_output = false;
    batch_rows = {1, 2, 5, 16, 24, 80};
    shape_rows = 2;
  }

  // Inputs x, each member's weight, q_norm, k_norm, positions; outputs q, k, v, then the caches.
  Call make_call(const CallRequest& request) const override {
    Call call = empty_call(request);
    call.inputs.push_back(matmul_x(request, kGemma12b.hidden));
    for (size_t i = 0; i < specs_.size(); ++i)
      for (HostData tensor : weights_[i].get(specs_[i], mix_seed(request.shared_seed, i), request.inputs)) {
        tensor.name = fmt::format("members[{}].{}", i, tensor.name);
        call.inputs.push_back(std::move(tensor));
      }
    Rng shared(request.shared_seed);
    for (const char* name : {"q_norm", "k_norm"})
      call.inputs.push_back(bf16_data(name, {dim_}, norm_weight(shared, dim_), false));
    add_outputs(call);
    Rng rng(request.seed);
    streams_.add_streams(call, request, rng, 0, kContext - 4, kContext - 1);
    return call;
  }

  Call assemble(std::span<const RowRef> rows) const override {
    return streams_.assemble(rows, [&](Call& batch) { add_outputs(batch); });
  }

  std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const override {
    return streams_.row_and_slot_bytes(call, row, 3);  // q, k and v, then the caches by slot
  }

  Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    std::vector<PreparedWeight> weights;
    for (size_t i = 0; i < specs_.size(); ++i) {
      auto weight = prepared_weight_from(backend, specs_[i], in.subspan(1 + i, 1));
      if (!weight.ok()) return weight.error();
      weights.push_back(std::move(*weight));
    }
    std::vector<ops::MatmulMember> members;
    for (size_t i = 0; i < specs_.size(); ++i) members.push_back({&weights[i].weight, flat(out[i])});
    const TensorView& q_norm = in[1 + specs_.size()];
    const TensorView& k_norm = in[2 + specs_.size()];
    const TensorView& values = values_from_keys() ? out[1] : out[2];
    const ops::HeadNormsOperands norms{out[0], q_norm,  out[1], k_norm, values, in[positions_at()],
                                       rope_,  kRmsEps, out[0], out[1], out[2]};
    return ops::matmul_head_norms(backend, in[0], members, norms, kv_segments(call.segments, out));
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const auto inputs = std::span(call.inputs);
    std::vector<std::vector<Span>> raw;
    for (size_t i = 0; i < specs_.size(); ++i)
      raw.push_back(matmul_spans(specs_[i], inputs[0], inputs.subspan(1 + i, 1), DType::bf16));
    const HostData& positions = call.inputs[positions_at()];
    const HostData* weights[] = {&call.inputs[1 + specs_.size()], &call.inputs[2 + specs_.size()]};
    std::vector<std::vector<Span>> spans(3);
    for (int64_t offset = 0; offset < call.rows * heads_ * dim_; offset += dim_)
      append(spans[0], norm_rope_vector(slice(raw[0], offset), weights[0],
                                        exact_at(positions, offset / (heads_ * dim_)), inv_freq_));
    for (int64_t offset = 0; offset < call.rows * kv_heads_ * dim_; offset += dim_) {
      append(spans[1], norm_rope_vector(slice(raw[1], offset), weights[1],
                                        exact_at(positions, offset / (kv_heads_ * dim_)), inv_freq_));
      for (const Span& value :
           rms_norm_spans(slice(raw[values_from_keys() ? 1 : 2], offset), nullptr, kRmsEps))
        spans[2].push_back(bf16(value));
    }
    spans.resize(call.outputs.size());
    const int64_t width = streams_.width();
    streams_.expect(call, spans, [&](int written, int64_t r, int64_t k) {
      return spans[written == 0 ? 1 : 2][static_cast<size_t>(r * width + k)];
    });
    return spans;
  }

 private:
  bool values_from_keys() const { return specs_.size() == 2; }
  // After x, the members' weights (bf16: one tensor each) and the two norm weights.
  static size_t positions_index(size_t members) { return 3 + members; }
  size_t positions_at() const { return positions_index(specs_.size()); }

  void add_outputs(Call& call) const {
    call.outputs.push_back(HostData::zeros("q", DType::bf16, {call.rows, heads_, dim_}, true));
    call.outputs.push_back(HostData::zeros("k", DType::bf16, {call.rows, kv_heads_, dim_}, true));
    call.outputs.push_back(HostData::zeros("v", DType::bf16, {call.rows, kv_heads_, dim_}, true));
  }

  // [rows, heads, dim] as the member's [rows, heads * dim], with its row stride.
  static TensorView flat(const TensorView& view) {
    TensorView rows = view;
    rows.shape = {view.dim(0), view.dim(1) * view.dim(2)};
    rows.strides = {view.strides.at(0), 1};
    return rows;
  }

  std::span<const Span> slice(const std::vector<Span>& spans, int64_t offset) const {
    return std::span(spans).subspan(static_cast<size_t>(offset), static_cast<size_t>(dim_));
  }

  static void append(std::vector<Span>& to, const std::vector<Span>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }

  int64_t heads_, kv_heads_, dim_;
  ops::RopeSpec rope_;
  std::vector<float> inv_freq_;
  std::vector<WeightSpec> specs_;
  std::vector<WeightCache> weights_;  // one per member
  StreamCaches streams_;
};

}  // namespace

void register_matmul_head_norms_forms(Registry& registry) {
  // A 12B sliding layer's q, k and v and a global layer's q and k, a quarter of their heads each.
  registry.forms.push_back(std::make_unique<MatmulHeadNormsForm>(
      "matmul_head_norms/12b-sliding-slice", kGemma12b.heads / 4, kGemma12b.sliding_kv_heads / 4,
      ops::RopeSpec{10000.0, kGemma12b.sliding_head_dim, 1.0, 1.0}, false));
  registry.forms.push_back(std::make_unique<MatmulHeadNormsForm>(
      "matmul_head_norms/12b-global-slice", kGemma12b.heads / 4, kGemma12b.global_kv_heads,
      ops::RopeSpec{1000000.0, kGemma12b.global_head_dim, 0.25, 1.0}, true));
}

}  // namespace plumb::contract::forms
