#pragma once
// Helpers for the op tests: seeded bf16 inputs, device round trips and bound checks that print index,
// expected, got and the bound.
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/half.hpp"
#include "ops/backend.hpp"
#include "ops/ops.hpp"
#include "ops/reference/reference.hpp"

namespace plumb::ops::testing {

using reference::Values;

// Seeded bf16 values uniform in [low, high).
inline Values random_bf16(uint64_t seed, size_t count, double low, double high) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  Values values(count);
  for (double& value : values) value = reference::round_bf16(uniform(engine));
  return values;
}

inline std::vector<uint16_t> to_bf16_bits(const Values& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t k = 0; k < values.size(); ++k) bits[k] = f32_to_bf16(static_cast<float>(values[k]));
  return bits;
}

inline DeviceTensor device_tensor(Backend& backend, DType dtype, Shape shape, const void* host) {
  auto tensor = backend.allocate(dtype, shape);
  EXPECT_TRUE(tensor.ok());
  TensorView source = TensorView::contiguous(const_cast<void*>(host), dtype, std::move(shape));
  EXPECT_TRUE(backend.upload(source, tensor->view).ok());
  return *tensor;
}

inline DeviceTensor device_bf16(Backend& backend, const Values& values, Shape shape) {
  const std::vector<uint16_t> bits = to_bf16_bits(values);
  return device_tensor(backend, DType::bf16, std::move(shape), bits.data());
}

inline DeviceTensor device_i32(Backend& backend, const std::vector<int32_t>& values) {
  return device_tensor(backend, DType::i32, {static_cast<int64_t>(values.size())}, values.data());
}

inline DeviceTensor device_zeros(Backend& backend, DType dtype, Shape shape) {
  std::vector<uint8_t> zeros(static_cast<size_t>(shape_elements(shape)) * dtype_size(dtype), 0);
  return device_tensor(backend, dtype, std::move(shape), zeros.data());
}

// The raw bytes of a device tensor, for bit comparisons.
inline std::vector<uint8_t> download_bytes(Backend& backend, const TensorView& view) {
  std::vector<uint8_t> bytes(view.bytes());
  TensorView host = TensorView::contiguous(bytes.data(), view.dtype, view.shape);
  EXPECT_TRUE(backend.download(view, host).ok());
  return bytes;
}

// A device tensor's values as doubles (bf16, f32 or i32).
inline Values download_values(Backend& backend, const TensorView& view) {
  const std::vector<uint8_t> bytes = download_bytes(backend, view);
  Values values(static_cast<size_t>(view.elements()));
  for (size_t k = 0; k < values.size(); ++k) {
    if (view.dtype == DType::bf16) {
      values[k] = bf16_to_f32(reinterpret_cast<const uint16_t*>(bytes.data())[k]);
    } else if (view.dtype == DType::f32) {
      values[k] = reinterpret_cast<const float*>(bytes.data())[k];
    } else {
      values[k] = reinterpret_cast<const int32_t*>(bytes.data())[k];
    }
  }
  return values;
}

// bf16's spacing at |value| (its ulp).
inline double bf16_ulp(double value) {
  const double magnitude = std::abs(value);
  if (magnitude < std::ldexp(1.0, -126)) return std::ldexp(1.0, -133);
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  return std::ldexp(1.0, exponent - 8);
}

// Checks got[k] against the pre-rounding reference[k]: |got - reference| <= 0.5 ulp + slack(k), and at least
// `exact_fraction` of the outputs equal round_bf16(reference) exactly. Prints the first failures.
inline void expect_bf16_close(const std::string& what, const Values& got, const Values& expected,
                              const std::function<double(size_t)>& slack, double exact_fraction) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  size_t exact = 0, failures = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double rounded = reference::round_bf16(expected[k]);
    if (got[k] == rounded && std::signbit(got[k]) == std::signbit(rounded)) ++exact;
    const double bound = 0.5 * bf16_ulp(std::abs(expected[k]) * (1.0 + 1e-6)) + slack(k);
    if (!(std::abs(got[k] - expected[k]) <= bound) && failures++ < 8)
      ADD_FAILURE() << fmt::format("{}: index {} expected {:.9g} (bf16 {:.9g}), got {:.9g}, bound {:.3g}",
                                   what, k, expected[k], rounded, got[k], bound);
  }
  const double fraction = got.empty() ? 1.0 : static_cast<double>(exact) / static_cast<double>(got.size());
  EXPECT_GE(fraction, exact_fraction)
      << fmt::format("{}: {} of {} outputs equal the rounded reference", what, exact, got.size());
}

// Exact comparison: every output equals round_bf16(reference) bit for bit (sign of zero included).
inline void expect_bf16_exact(const std::string& what, const Values& got, const Values& expected) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  size_t failures = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double rounded = reference::round_bf16(expected[k]);
    const bool same = (got[k] == rounded && std::signbit(got[k]) == std::signbit(rounded)) ||
                      (std::isnan(got[k]) && std::isnan(rounded));
    if (!same && failures++ < 8)
      ADD_FAILURE() << fmt::format("{}: index {} expected {:.9g}, got {:.9g}, bound exact", what, k, rounded,
                                   got[k]);
  }
}

}  // namespace plumb::ops::testing
