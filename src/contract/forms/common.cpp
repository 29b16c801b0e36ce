#include "contract/forms/common.hpp"

#include <algorithm>
#include <cstring>
#include <numbers>

#include "core/error.hpp"

namespace plumb::contract::forms {

HostData bf16_data(std::string name, Shape shape, std::span<const uint16_t> values, bool per_row) {
  HostData data = HostData::zeros(std::move(name), DType::bf16, std::move(shape), per_row);
  PLUMB_ASSERT(values.size() == static_cast<size_t>(data.elements()), "one value per element");
  std::memcpy(data.bytes.data(), values.data(), data.bytes.size());
  return data;
}

HostData i32_data(std::string name, Shape shape, std::span<const int32_t> values, bool per_row) {
  HostData data = HostData::zeros(std::move(name), DType::i32, std::move(shape), per_row);
  PLUMB_ASSERT(values.size() == static_cast<size_t>(data.elements()), "one value per element");
  std::memcpy(data.bytes.data(), values.data(), data.bytes.size());
  return data;
}

HostData widen_to_f32(const HostData& bf16_values) {
  HostData wide = HostData::zeros(bf16_values.name, DType::f32, bf16_values.shape, bf16_values.per_row);
  for (int64_t i = 0; i < wide.elements(); ++i)
    wide.as<float>()[i] = static_cast<float>(bf16_values.value(i));
  return wide;
}

HostData logit_rows(Inputs inputs, Rng& rng, int64_t rows, int64_t width, DType dtype,
                    const std::function<void(Rng&, std::vector<uint16_t>&)>& plant) {
  std::vector<uint16_t> values = inputs == Inputs::ties ? integers_bf16(rng, rows * width, -3, 3)
                                                        : activations(inputs, rng, rows, width, 8.0);
  if (inputs == Inputs::ties) {
    plant(rng, values);
    if (rows > 1) std::fill(values.end() - width, values.end(), uint16_t{0xffc0});
  }
  HostData x = bf16_data("x", {rows, width}, values, true);
  return dtype == DType::f32 ? widen_to_f32(x) : x;
}

std::vector<ops::KvSegment> kv_segments(std::span<const Segment> segments,
                                        std::span<const TensorView> caches) {
  std::vector<ops::KvSegment> out;
  for (const Segment& segment : segments) {
    const auto cache = static_cast<size_t>(segment.cache);
    out.push_back(
        {segment.first_row, segment.rows, ops::KvView{caches[cache], caches[cache + 1], segment.end}});
  }
  return out;
}

// PyTorch's gelu(approximate="tanh") in fp32 steps: 0.5 x (1 + tanh(beta (x + kappa x^3))).
Span gelu_tanh_span(const Span& x) {
  const Span kappa = f32_constant(0.044715);
  const Span beta = f32_constant(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
  const Span kappa_cube = f32_chain(kappa * x * x * x, 3);  // x*x*x and the constant in any order
  const Span inner = f32_mul(beta, f32_add(x, kappa_cube));
  const Span one_plus = f32_add(Span::exact(1.0), f32_tanh(inner));
  return f32_chain(Span::exact(0.5) * x * one_plus, 2);
}

Span geglu_span(const Span& gate, const Span& up) {
  return bf16(f32_mul(bf16(gelu_tanh_span(gate)), up));
}

Span exact_at(const HostData& data, int64_t i) {
  return Span::exact(data.value(i));
}

float f32_at(const HostData& data, int64_t i) {
  return static_cast<float>(data.value(i));
}

std::vector<uint16_t> activations(Inputs inputs, Rng& rng, int64_t rows, int64_t width, double scale) {
  switch (inputs) {
    case Inputs::zero_sum:
      return zero_sum_bf16(rng, rows, width, 64);
    case Inputs::cancel_pairs:
      return cancel_pairs_bf16(rng, rows, width, 3, 64);
    case Inputs::extremes: {
      std::vector<uint16_t> values = extremes_bf16(rng, rows * width, 0x1p100);
      // An all-zero row: the norms' eps is all that keeps it finite.
      for (int64_t k = 0; k < width; ++k) values[static_cast<size_t>(k)] = (k % 2) ? 0x8000 : 0x0000;
      return values;
    }
    default:
      return gaussian_bf16(rng, rows * width, scale);
  }
}

}  // namespace plumb::contract::forms
