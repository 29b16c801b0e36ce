// Forms of rms_norm, residual_norm and norm_rope, with their ranges: the sum of squares in fp32 in any order,
// rsqrtf within its ulps, cos/sin within theirs, and bf16 wherever HF rounds.
#include <algorithm>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/registry.hpp"
#include "core/half.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {

// HF Gemma4RMSNorm: (x * rsqrt(mean(x^2) + eps)) * w in fp32, before the final rounding, over fp32 values
// each known to lie in its span (one value each where x is a tensor; a range where x is an earlier step's
// rounded result).
std::vector<Span> rms_norm_spans(std::span<const Span> x, const HostData* weight, float eps) {
  const bool exact = std::all_of(x.begin(), x.end(), [](const Span& value) { return value.single(); });
  Span sum_squares;
  if (exact) {
    std::vector<float> values;
    for (const Span& value : x) values.push_back(static_cast<float>(value.lo));
    sum_squares = f32_dot(values, values);
  } else {
    std::vector<Span> squares;
    for (const Span& value : x) squares.push_back(f32_mul(value, value));
    sum_squares = f32_sum(squares);
  }
  const auto dim = static_cast<int64_t>(x.size());
  const Span mean = f32_chain(sum_squares / Span::exact(static_cast<double>(dim)), 2);  // / dim or * (1/dim)
  const Span inverse = f32_rsqrt(f32_add(mean, Span::exact(eps)));
  std::vector<Span> out(static_cast<size_t>(dim));
  for (int64_t k = 0; k < dim; ++k) {
    const Span& xk = x[static_cast<size_t>(k)];
    out[static_cast<size_t>(k)] =
        weight == nullptr ? f32_mul(xk, inverse) : f32_chain(xk * inverse * exact_at(*weight, k), 2);
  }
  return out;
}

std::vector<Span> rms_norm_vector(const HostData& x, int64_t offset, int64_t dim, const HostData* weight,
                                  float eps) {
  std::vector<Span> values(static_cast<size_t>(dim));
  for (int64_t k = 0; k < dim; ++k) values[static_cast<size_t>(k)] = exact_at(x, offset + k);
  return rms_norm_spans(values, weight, eps);
}

// bf16 weights around 1 (Gemma 4's norms hold w, not 1 + w).
std::vector<uint16_t> norm_weight(Rng& rng, int64_t dim) {
  std::vector<uint16_t> weight = gaussian_bf16(rng, dim, 0.5);
  for (auto& w : weight) w = f32_to_bf16(1.0f + bf16_to_f32(w));
  return weight;
}

std::vector<Span> norm_rope_vector(std::span<const Span> x, const HostData* weight, const Span& position,
                                   std::span<const float> inv_freq) {
  const auto dim = static_cast<int64_t>(x.size()), half = dim / 2;
  std::vector<Span> normed = rms_norm_spans(x, weight, kRmsEps);
  for (Span& value : normed) value = bf16(value);
  std::vector<Span> out(static_cast<size_t>(dim));
  for (int64_t i = 0; i < half; ++i) {
    const Span theta = f32_mul(position, Span::exact(inv_freq[static_cast<size_t>(i)]));
    const Span cosine = bf16(f32_cos(theta)), sine = bf16(f32_sin(theta));
    const Span& first = normed[static_cast<size_t>(i)];
    const Span& second = normed[static_cast<size_t>(i + half)];
    out[static_cast<size_t>(i)] = bf16(f32_add(bf16(f32_mul(first, cosine)), bf16(f32_mul(-second, sine))));
    out[static_cast<size_t>(i + half)] =
        bf16(f32_add(bf16(f32_mul(second, cosine)), bf16(f32_mul(first, sine))));
  }
  return out;
}

std::vector<Span> norm_rope_spans(const HostData& x, int64_t heads, int64_t dim, const HostData* weight,
                                  const HostData& positions, std::span<const float> inv_freq) {
  std::vector<Span> out;
  std::vector<Span> values(static_cast<size_t>(dim));
  for (int64_t offset = 0; offset < x.elements(); offset += dim) {
    for (int64_t k = 0; k < dim; ++k) values[static_cast<size_t>(k)] = exact_at(x, offset + k);
    const std::vector<Span> vector =
        norm_rope_vector(values, weight, exact_at(positions, offset / (heads * dim)), inv_freq);
    out.insert(out.end(), vector.begin(), vector.end());
  }
  return out;
}

std::vector<int32_t> rope_positions(const CallRequest& request) {
  Rng rng(mix_seed(request.seed, 77));
  // Positions over the whole context; the extremes stress sits at its far end, where angles are largest.
  const int64_t low = request.inputs == Inputs::extremes ? kContext - 4096 : 0;
  std::vector<int32_t> positions(static_cast<size_t>(request.rows));
  for (auto& p : positions) p = static_cast<int32_t>(rng.integer(low, kContext - 1));
  return positions;
}

namespace {

constexpr float kLayerScalar = 0.59765625f;  // a bf16 value, as Gemma 4's layer scalars are

class NormForm : public Form {
 public:
  NormForm(std::string op, std::string name, std::string dims, int64_t heads, int64_t dim, bool weighted)
      : Form(std::move(op), std::move(name), std::move(dims)), heads_(heads), dim_(dim), weighted_(weighted) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs, Inputs::extremes};
  }

 protected:
  // x [rows, heads, dim] (or [rows, dim] when heads is 0) and, when weighted, the bf16 weight (around 1).
  Call norm_call(const CallRequest& request) const {
    Rng rng(request.seed);
    Call call = empty_call(request);
    const int64_t width = std::max<int64_t>(heads_, 1) * dim_;
    Shape shape = heads_ > 0 ? Shape{request.rows, heads_, dim_} : Shape{request.rows, dim_};
    call.inputs.push_back(
        bf16_data("x", shape, activations(request.inputs, rng, request.rows, width, 3.0), true));
    if (weighted_) {
      Rng shared(request.shared_seed);
      call.inputs.push_back(bf16_data("weight", {dim_}, norm_weight(shared, dim_), false));
    }
    call.outputs.push_back(HostData::zeros("out", DType::bf16, shape, true));
    return call;
  }

  const HostData* weight(const Call& call) const { return weighted_ ? &call.inputs[1] : nullptr; }
  const TensorView* weight_view(std::span<const TensorView> in) const { return weighted_ ? &in[1] : nullptr; }

  int64_t heads_;  // 0: [rows, dim]
  int64_t dim_;
  bool weighted_;
};

class RmsNormForm final : public NormForm {
 public:
  RmsNormForm(std::string name, int64_t heads, int64_t dim, bool weighted)
      : NormForm("rms_norm", std::move(name),
                 fmt::format(
                     "{}, eps 1e-6, {}",
                     heads > 0 ? fmt::format("[rows, {}, {}]", heads, dim) : fmt::format("[rows, {}]", dim),
                     weighted ? "weighted" : "weightless"),
                 heads, dim, weighted) {}

  Call make_call(const CallRequest& request) const override { return norm_call(request); }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::rms_norm(backend, in[0], weight_view(in), kRmsEps, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<Span> out;
    const HostData& x = call.inputs[0];
    for (int64_t offset = 0; offset < x.elements(); offset += dim_)
      for (const Span& value : rms_norm_vector(x, offset, dim_, weight(call), kRmsEps))
        out.push_back(bf16(value));
    return {out};
  }
};

// q/k norm then RoPE (rotate_half layout), with HF's bf16 points: n = bf16(norm), c/s = bf16(cos/sin(theta)),
// out = bf16(bf16(n * c) + bf16(rotate_half(n) * s)).
class NormRopeForm final : public NormForm {
 public:
  NormRopeForm(std::string name, int64_t heads, const ops::RopeSpec& rope)
      : NormForm("norm_rope", std::move(name),
                 fmt::format("[rows, {}, {}], theta {}, rotary {}", heads, rope.head_dim, rope.theta,
                             rope.partial_rotary_factor),
                 heads, rope.head_dim, true),
        inv_freq_(ops::rope_inv_freq(rope)),
        rope_(rope) {}

  Call make_call(const CallRequest& request) const override {
    Call call = norm_call(request);
    call.inputs.push_back(i32_data("positions", {request.rows}, rope_positions(request), true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::norm_rope(backend, in[0], weight_view(in), kRmsEps, in[2], rope_, out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    return {norm_rope_spans(call.inputs[0], heads_, dim_, weight(call), call.inputs[2], inv_freq_)};
  }

 private:
  std::vector<float> inv_freq_;
  ops::RopeSpec rope_;
};

// A block's end: h_out = bf16(h + bf16(norm(o) * w_post)), bf16(h_out * factor) when scaled, next =
// bf16(norm(h_out) * w_next); next's range is the norm over h_out's ranges.
class ResidualNormForm final : public Form {
 public:
  ResidualNormForm(std::string name, int64_t dim, std::optional<float> factor)
      : Form("residual_norm", std::move(name),
             fmt::format("[rows, {}], eps 1e-6, {}", dim,
                         factor ? fmt::format("layer scalar {}", *factor) : std::string("no scalar"))),
        dim_(dim),
        factor_(factor) {
    stresses = {Inputs::zero_sum, Inputs::cancel_pairs, Inputs::extremes};
    batch_rows = {1, 2, 5, 16, 80};  // CUDA takes rows a warp each from 64 rows, a block each below
  }

  // h and o per row; the two norm weights shared.
  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    const Shape shape{request.rows, dim_};
    for (const char* name : {"h", "o"})
      call.inputs.push_back(
          bf16_data(name, shape, activations(request.inputs, rng, request.rows, dim_, 3.0), true));
    Rng shared(request.shared_seed);
    for (const char* name : {"post_weight", "next_weight"})
      call.inputs.push_back(bf16_data(name, {dim_}, norm_weight(shared, dim_), false));
    for (const char* name : {"h_out", "next"})
      call.outputs.push_back(HostData::zeros(name, DType::bf16, shape, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::residual_norm(backend, in[0], in[1], in[2], factor_, in[3], kRmsEps, out[0], out[1]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    const HostData& h = call.inputs[0];
    std::vector<Span> h_out, next;
    for (int64_t offset = 0; offset < h.elements(); offset += dim_) {
      const std::vector<Span> normed =
          rms_norm_vector(call.inputs[1], offset, dim_, &call.inputs[2], kRmsEps);
      std::vector<Span> row(static_cast<size_t>(dim_));
      for (int64_t k = 0; k < dim_; ++k) {
        Span sum = bf16(f32_add(exact_at(h, offset + k), bf16(normed[static_cast<size_t>(k)])));
        if (factor_) sum = bf16(f32_mul(sum, Span::exact(*factor_)));
        row[static_cast<size_t>(k)] = sum;
      }
      for (const Span& value : rms_norm_spans(row, &call.inputs[3], kRmsEps)) next.push_back(bf16(value));
      h_out.insert(h_out.end(), row.begin(), row.end());
    }
    return {h_out, next};
  }

 private:
  int64_t dim_;
  std::optional<float> factor_;  // bf16-representable
};

}  // namespace

void register_norm_forms(Registry& registry) {
  auto& forms = registry.forms;
  for (const ModelShape& model : {kGemma12b, kGemma31b}) {
    const std::string m = model.name;
    forms.push_back(std::make_unique<RmsNormForm>("rms_norm/" + m + "-hidden", 0, model.hidden, true));
    forms.push_back(
        std::make_unique<ResidualNormForm>("residual_norm/" + m + "-attention", model.hidden, std::nullopt));
    forms.push_back(
        std::make_unique<ResidualNormForm>("residual_norm/" + m + "-mlp", model.hidden, kLayerScalar));
    forms.push_back(std::make_unique<RmsNormForm>("rms_norm/" + m + "-v-sliding", model.sliding_kv_heads,
                                                  model.sliding_head_dim, false));
    forms.push_back(std::make_unique<RmsNormForm>("rms_norm/" + m + "-v-global", model.global_kv_heads,
                                                  model.global_head_dim, false));
    const ops::RopeSpec sliding{10000.0, model.sliding_head_dim, 1.0, 1.0};
    const ops::RopeSpec global{1000000.0, model.global_head_dim, 0.25, 1.0};
    forms.push_back(std::make_unique<NormRopeForm>("norm_rope/" + m + "-q-sliding", model.heads, sliding));
    forms.push_back(
        std::make_unique<NormRopeForm>("norm_rope/" + m + "-k-sliding", model.sliding_kv_heads, sliding));
    forms.push_back(std::make_unique<NormRopeForm>("norm_rope/" + m + "-q-global", model.heads, global));
    forms.push_back(
        std::make_unique<NormRopeForm>("norm_rope/" + m + "-k-global", model.global_kv_heads, global));
  }
}

}  // namespace plumb::contract::forms
