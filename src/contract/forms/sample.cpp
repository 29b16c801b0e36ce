// The keyed draw (ops::sample): each row's id must equal the host's draw (ops/sampling.hpp) bit for bit,
// under options that reach every step: greedy, temperature, top-k, top-p, min-p, and their mixes.
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "contract/forms/common.hpp"
#include "contract/parallel.hpp"
#include "contract/registry.hpp"
#include "core/half.hpp"
#include "ops/ops.hpp"
#include "ops/sampling.hpp"

namespace plumb::contract::forms {

namespace {

// Row options: greedy, plain temperature, each filter alone, and all of them, at varied temperatures.
ops::SampleParams row_options(Rng& rng) {
  static constexpr float kTemperatures[] = {0.25f, 0.7f, 1.0f, 1.5f, 4.0f};
  static constexpr int32_t kTopK[] = {0, 0, 2, 40, 1000};
  static constexpr float kTopP[] = {1.0f, 1.0f, 0.5f, 0.9f, 0.99f};
  static constexpr float kMinP[] = {0.0f, 0.0f, 0.0f, 0.05f, 0.3f};
  ops::SampleParams params;
  const int64_t kind = rng.integer(0, 9);
  if (kind > 0) {  // one row in ten is greedy
    params.temperature = kTemperatures[rng.integer(0, 4)];
    params.top_k = kTopK[rng.integer(0, 4)];
    params.top_p = kTopP[rng.integer(0, 4)];
    params.min_p = kMinP[rng.integer(0, 4)];
  }
  params.seed = rng.next();
  params.position = rng.integer(0, 1 << 20);
  return params;
}

class SampleForm final : public Form {
 public:
  SampleForm(std::string name, int64_t width, DType in_dtype)
      : Form("sample", std::move(name), fmt::format("[rows, {}] {} -> i32", width, dtype_name(in_dtype))),
        width_(width),
        in_dtype_(in_dtype) {
    batch_rows = {1, 2, 5};
    shape_rows = 24;
    stresses = {Inputs::ties, Inputs::extremes};
  }

  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    HostData x =
        logit_rows(request.inputs, rng, request.rows, width_, in_dtype_,
                   [&](Rng& r, std::vector<uint16_t>& values) { plant_non_finite(r, request.rows, values); });
    const auto param_bytes = static_cast<int64_t>(sizeof(ops::SampleParams));
    HostData params = HostData::zeros("params", DType::u8, {request.rows, param_bytes}, true);
    for (int64_t r = 0; r < request.rows; ++r) {
      const ops::SampleParams row = row_options(rng);
      std::memcpy(params.bytes.data() + r * param_bytes, &row, sizeof(row));
    }
    call.inputs.push_back(std::move(x));
    call.inputs.push_back(std::move(params));
    call.outputs.push_back(HostData::zeros("id", DType::i32, {request.rows}, true));
    return call;
  }

  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::sample(backend, in[0], in[1], out[0]);
  }

  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<Span> out(static_cast<size_t>(call.rows));
    parallel_indices(call.rows, [&](int64_t r) {  // each row's draw by one thread
      thread_local std::vector<float> row;
      row.resize(static_cast<size_t>(width_));
      for (int64_t k = 0; k < width_; ++k)
        row[static_cast<size_t>(k)] = static_cast<float>(call.inputs[0].value(r * width_ + k));
      ops::SampleParams params;
      std::memcpy(&params, call.inputs[1].bytes.data() + r * sizeof(params), sizeof(params));
      out[static_cast<size_t>(r)] = Span::exact(static_cast<double>(ops::draw_keyed(row, params)));
    });
    return {out};
  }

 private:
  // NaN and +-inf scattered in (no candidates, but +inf wins a greedy row); logit_rows adds the all-NaN row
  // (-1).
  void plant_non_finite(Rng& rng, int64_t rows, std::vector<uint16_t>& values) const {
    for (int64_t r = 0; r < rows; ++r) {
      uint16_t* row = values.data() + r * width_;
      for (int t = 0; t < 64; ++t) row[rng.integer(0, width_ - 1)] = 0x7fc1;
      for (int t = 0; t < 8; ++t) row[rng.integer(0, width_ - 1)] = 0xff80;
      if (r % 3 == 2) row[rng.integer(0, width_ - 1)] = 0x7f80;
    }
  }

  int64_t width_;
  DType in_dtype_;
};

}  // namespace

void register_sample_forms(Registry& registry) {
  registry.forms.push_back(std::make_unique<SampleForm>("sample/logits-bf16", kVocab, DType::bf16));
  registry.forms.push_back(std::make_unique<SampleForm>("sample/logits-f32", kVocab, DType::f32));
}

}  // namespace plumb::contract::forms
