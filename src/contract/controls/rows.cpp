// Controls for geglu, add, scale, soft_cap and argmax.
#include <cmath>
#include <numbers>

#include "contract/controls/common.hpp"
#include "contract/registry.hpp"
#include "ops/sampling.hpp"

namespace plumb::contract::controls {
namespace {

float gelu_tanh(float x) {
  const auto beta = static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
  return 0.5f * x * (1.0f + std::tanh(beta * (x + 0.044715f * x * x * x)));
}

// Drops HF's rounding of the activation before the product: bf16(gelu(g) * up).
class GeluUnrounded final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void geglu(const ops::RowsLaunch& launch) override {
    each_element(launch, [](float gate, float up) { return gelu_tanh(gate) * up; });
  }
};

// The exact erf GELU where the model uses the tanh approximation.
class GeluErf final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void geglu(const ops::RowsLaunch& launch) override {
    each_element(launch, [](float gate, float up) {
      return round_bf16(0.5f * gate * (1.0f + std::erf(gate * static_cast<float>(std::numbers::sqrt2 / 2)))) *
             up;
    });
  }
};

// Rounds the sum toward zero instead of to nearest even.
class AddTruncates final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void add(const ops::RowsLaunch& launch) override {
    for (int64_t r = 0; r < launch.rows; ++r)
      for (int64_t k = 0; k < launch.width; ++k) {
        const float sum =
            bf16_to_f32(launch.a[r * launch.a_stride + k]) + bf16_to_f32(launch.b[r * launch.b_stride + k]);
        static_cast<uint16_t*>(launch.out)[r * launch.out_stride + k] = f32_to_bf16(truncate_bf16(sum));
      }
  }
};

// Leaves each row's last element unwritten.
class AddSkipsLast final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void add(const ops::RowsLaunch& launch) override {
    ops::RowsLaunch shorter = launch;
    shorter.width -= 1;
    each_element(shorter, [](float a, float b) { return a + b; });
  }
};

// Passes the sum through f16 (11 bits, overflow past 65504) on its way to bf16.
class AddThroughF16 final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void add(const ops::RowsLaunch& launch) override {
    each_element(launch, [](float a, float b) { return f16_to_f32(f32_to_f16(a + b)); });
  }
};

class ScaleThroughF16 final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void scale(const ops::RowsLaunch& launch) override {
    const float factor = launch.factor;
    each_element(launch, [factor](float x, float) { return f16_to_f32(f32_to_f16(x * factor)); });
  }
};

class ScaleTruncates final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void scale(const ops::RowsLaunch& launch) override {
    const float factor = launch.factor;
    each_element(launch, [factor](float x, float) { return truncate_bf16(x * factor); });
  }
};

// Fast math's flush of subnormal operands and results to zero.
float flush(float value) {
  return std::fpclassify(value) == FP_SUBNORMAL ? std::copysign(0.0f, value) : value;
}

// The soft cap with one of HF's three roundings dropped, subnormals flushed, or tanh from exp.
enum class CapFault { quotient_unrounded, tanh_unrounded, flush_to_zero, tanh_from_exp };

template <CapFault fault>
class SoftCapFault final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void soft_cap(const ops::RowsLaunch& launch) override {
    const float cap = launch.factor;
    each_element(launch, [cap](float x, float) {
      float quotient = fault == CapFault::flush_to_zero ? flush(flush(x) / cap) : x / cap;
      if (fault != CapFault::quotient_unrounded) quotient = round_bf16(quotient);
      float tanh = fault == CapFault::tanh_from_exp ? 1.0f - 2.0f / (std::exp(2.0f * quotient) + 1.0f)
                                                    : std::tanh(quotient);
      if (fault != CapFault::tanh_unrounded) tanh = round_bf16(tanh);
      return tanh * cap;
    });
  }
};

// argmax that keeps the last of equal maxima, or lets NaN win.
template <bool last_tie, bool nan_wins>
class ArgmaxFault final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void argmax(const ops::ArgmaxLaunch& launch) override {
    for (int64_t r = 0; r < launch.rows; ++r) {
      int32_t best = 0, first_nan = -1;
      float best_value = NAN;
      for (int64_t k = 0; k < launch.width; ++k) {
        const float value = ops::logit_value(launch.x, launch.x_dtype, r * launch.x_stride + k);
        if (std::isnan(value)) {
          if (first_nan < 0) first_nan = static_cast<int32_t>(k);
          continue;
        }
        if (std::isnan(best_value) || value > best_value || (last_tie && value == best_value)) {
          best_value = value;
          best = static_cast<int32_t>(k);
        }
      }
      if (nan_wins && first_nan >= 0) best = first_nan;
      launch.out[r] = best;
    }
  }
};

}  // namespace

void register_row_controls(Registry& registry) {
  auto& list = registry.controls;
  list.push_back(planted<GeluUnrounded>("geglu/gelu-unrounded", "geglu/12b-mlp", Gate::shapes,
                                        "drops the bf16 rounding of gelu(gate) before the product"));
  list.push_back(planted<GeluErf>("geglu/erf-gelu", "geglu/31b-mlp", Gate::shapes,
                                  "uses the erf GELU instead of the tanh approximation"));
  list.push_back(planted<AddTruncates>("add/truncating-bf16", "add/12b-residual", Gate::shapes,
                                       "rounds the sum to bf16 toward zero"));
  list.push_back(planted<AddSkipsLast>("add/skips-last-column", "add/31b-residual", Gate::runs,
                                       "never writes the last element of a row"));
  list.push_back(planted<AddThroughF16>("add/f16-sum", "add/12b-residual", Gate::stress,
                                        "rounds the sum through f16, which overflows past 65504"));
  list.push_back(planted<ScaleThroughF16>("scale/f16-product", "scale/12b-layer-scalar", Gate::stress,
                                          "rounds the product through f16"));
  list.push_back(planted<ScaleTruncates>("scale/truncating-bf16", "scale/31b-layer-scalar", Gate::shapes,
                                         "rounds the product to bf16 toward zero"));
  list.push_back(planted<SoftCapFault<CapFault::quotient_unrounded>>("soft_cap/quotient-unrounded",
                                                                     "soft_cap/logits-bf16", Gate::shapes,
                                                                     "drops the bf16 rounding of x / cap"));
  list.push_back(planted<SoftCapFault<CapFault::tanh_unrounded>>(
      "soft_cap/tanh-unrounded", "soft_cap/logits-f32", Gate::shapes, "drops the bf16 rounding of tanh"));
  list.push_back(planted<SoftCapFault<CapFault::flush_to_zero>>(
      "soft_cap/flush-to-zero", "soft_cap/logits-bf16", Gate::stress,
      "flushes subnormal inputs and quotients to zero, as fast math does"));
  list.push_back(planted<SoftCapFault<CapFault::tanh_from_exp>>(
      "soft_cap/tanh-from-exp", "soft_cap/logits-bf16", Gate::stress,
      "computes tanh(y) as 1 - 2 / (exp(2y) + 1), which loses small y"));
  list.push_back(planted<ArgmaxFault<true, false>>("argmax/last-of-ties", "argmax/logits-bf16", Gate::stress,
                                                   "keeps the last of equal maxima"));
  list.push_back(planted<ArgmaxFault<false, true>>("argmax/nan-wins", "argmax/logits-f32", Gate::stress,
                                                   "lets a NaN win over numbers"));
}

}  // namespace plumb::contract::controls
