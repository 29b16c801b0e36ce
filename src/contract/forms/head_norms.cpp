// Forms of head_norms: norm_rope's ranges for q and k, rms_norm's for the weightless values, at Gemma 4's
// sliding layers (values from their own projection) and global layers (values from the raw keys); and with
// caches, each stream's keys and values also written to its cache as kv_write writes them.
#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/forms/streams.hpp"
#include "contract/registry.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {
namespace {

// What both forms share: inputs q, k, v (the keys again where the values come from them), q_weight, k_weight,
// positions; outputs q_out, k_out, v_out (then the caches); and those outputs' ranges.
class HeadNormsShape : public Form {
 public:
  HeadNormsShape(std::string name, std::string what, int64_t heads, int64_t kv_heads,
                 const ops::RopeSpec& rope, bool values_from_keys)
      : Form("head_norms", std::move(name),
             fmt::format("q [rows, {}, {}], k [rows, {}, {}], values from {}, theta {}, rotary {}{}", heads,
                         rope.head_dim, kv_heads, rope.head_dim, values_from_keys ? "the keys" : "v",
                         rope.theta, rope.partial_rotary_factor, what)),
        heads_(heads),
        kv_heads_(kv_heads),
        dim_(rope.head_dim),
        values_from_keys_(values_from_keys),
        rope_(rope),
        inv_freq_(ops::rope_inv_freq(rope)) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs, Inputs::extremes};
  }

 protected:
  static constexpr size_t kPositions = 5;

  Shape q_shape(int64_t rows) const { return {rows, heads_, dim_}; }
  Shape kv_shape(int64_t rows) const { return {rows, kv_heads_, dim_}; }

  // Inputs q, k, v, q_weight and k_weight of a call for `request`.
  Call call_inputs(const CallRequest& request, Rng& rng) const {
    Call call = empty_call(request);
    const auto rows_of = [&](int64_t heads) {
      return activations(request.inputs, rng, request.rows, heads * dim_, 3.0);
    };
    call.inputs.push_back(bf16_data("q", q_shape(request.rows), rows_of(heads_), true));
    call.inputs.push_back(bf16_data("k", kv_shape(request.rows), rows_of(kv_heads_), true));
    call.inputs.push_back(bf16_data("v", kv_shape(request.rows), rows_of(kv_heads_), true));
    Rng shared(request.shared_seed);
    for (const char* name : {"q_weight", "k_weight"})
      call.inputs.push_back(bf16_data(name, {dim_}, norm_weight(shared, dim_), false));
    return call;
  }

  void add_outputs(Call& call) const {
    call.outputs.push_back(HostData::zeros("q_out", DType::bf16, q_shape(call.rows), true));
    call.outputs.push_back(HostData::zeros("k_out", DType::bf16, kv_shape(call.rows), true));
    call.outputs.push_back(HostData::zeros("v_out", DType::bf16, kv_shape(call.rows), true));
  }

  Status run(ops::Backend& backend, std::span<const TensorView> in, std::span<const TensorView> out,
             const std::vector<ops::KvSegment>* segments) const {
    const TensorView& values = values_from_keys_ ? in[1] : in[2];
    if (segments == nullptr)
      return ops::head_norms(backend, in[0], in[3], in[1], in[4], values, in[5], rope_, kRmsEps, out[0],
                             out[1], out[2]);
    return ops::head_norms(backend, in[0], in[3], in[1], in[4], values, in[5], rope_, kRmsEps, out[0], out[1],
                           out[2], *segments);
  }

  // The ranges of q_out, k_out and v_out.
  std::vector<std::vector<Span>> norm_spans(const Call& call) const {
    const HostData& positions = call.inputs[kPositions];
    const HostData& values = call.inputs[values_from_keys_ ? 1 : 2];
    std::vector<Span> v_out;
    for (int64_t offset = 0; offset < values.elements(); offset += dim_)
      for (const Span& value : rms_norm_vector(values, offset, dim_, nullptr, kRmsEps))
        v_out.push_back(bf16(value));
    return {norm_rope_spans(call.inputs[0], heads_, dim_, &call.inputs[3], positions, inv_freq_),
            norm_rope_spans(call.inputs[1], kv_heads_, dim_, &call.inputs[4], positions, inv_freq_), v_out};
  }

  int64_t heads_, kv_heads_, dim_;

 private:
  bool values_from_keys_;
  ops::RopeSpec rope_;
  std::vector<float> inv_freq_;
};

class HeadNormsForm final : public HeadNormsShape {
 public:
  using HeadNormsShape::HeadNormsShape;

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = call_inputs(request, rng);
    call.inputs.push_back(i32_data("positions", {request.rows}, rope_positions(request), true));
    add_outputs(call);
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return run(backend, in, out, nullptr);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override { return norm_spans(call); }
};

// Several streams' rows (StreamCaches' streams, their positions within the context; the extremes stress at
// its end), each stream's keys and values also written to its cache of kStreamSlots slots.
class HeadNormsStreamsForm final : public HeadNormsShape {
 public:
  static constexpr int64_t kStreamSlots = 8;

  HeadNormsStreamsForm(std::string name, int64_t heads, int64_t kv_heads, const ops::RopeSpec& rope,
                       bool values_from_keys)
      : HeadNormsShape(
            std::move(name),
            fmt::format(", into a cache [{}, {}, {}] per stream", kStreamSlots, kv_heads, rope.head_dim),
            heads, kv_heads, rope, values_from_keys),
        streams_{kStreamSlots, kv_heads, rope.head_dim, kPositions} {
    writes_every_output = false;
    batch_rows = {1, 2, 5, 16, 80};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = call_inputs(request, rng);
    add_outputs(call);
    streams_.add_streams(call, request, rng, 0, kContext - 4, kContext - 1);
    return call;
  }

  Call assemble(std::span<const RowRef> rows) const override {
    return streams_.assemble(rows, [&](Call& batch) { add_outputs(batch); });
  }

  std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const override {
    return streams_.row_and_slot_bytes(call, row, 3);  // q_out, k_out and v_out, then the caches by slot
  }

  Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    const std::vector<ops::KvSegment> segments = kv_segments(call.segments, out);
    return run(backend, in, out, &segments);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<std::vector<Span>> spans = norm_spans(call);
    spans.resize(call.outputs.size());
    const int64_t width = streams_.width();
    streams_.expect(call, spans, [&](int written, int64_t r, int64_t k) {
      return spans[written == 0 ? 1 : 2][static_cast<size_t>(r * width + k)];
    });
    return spans;
  }

 private:
  StreamCaches streams_;
};

}  // namespace

void register_head_norms_forms(Registry& registry) {
  for (const ModelShape& model : {kGemma12b, kGemma31b}) {
    const std::string m = model.name;
    const ops::RopeSpec sliding{10000.0, model.sliding_head_dim, 1.0, 1.0};
    const ops::RopeSpec global{1000000.0, model.global_head_dim, 0.25, 1.0};
    registry.forms.push_back(std::make_unique<HeadNormsForm>("head_norms/" + m + "-sliding", "", model.heads,
                                                             model.sliding_kv_heads, sliding, false));
    registry.forms.push_back(std::make_unique<HeadNormsForm>("head_norms/" + m + "-global", "", model.heads,
                                                             model.global_kv_heads, global, true));
  }
  registry.forms.push_back(std::make_unique<HeadNormsStreamsForm>(
      "head_norms/12b-sliding-streams", kGemma12b.heads, kGemma12b.sliding_kv_heads,
      ops::RopeSpec{10000.0, kGemma12b.sliding_head_dim, 1.0, 1.0}, false));
  registry.forms.push_back(std::make_unique<HeadNormsStreamsForm>(
      "head_norms/12b-global-streams", kGemma12b.heads, kGemma12b.global_kv_heads,
      ops::RopeSpec{1000000.0, kGemma12b.global_head_dim, 0.25, 1.0}, true));
}

}  // namespace plumb::contract::forms
