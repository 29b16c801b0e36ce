// Matmul (dense and affine), GeGLU, add, scale, soft cap and argmax on the CPU against their float64
// references.
#include <cmath>
#include <limits>

#include "cpu/cpu_backend.hpp"
#include "ops/affine.hpp"
#include "ops_test_util.hpp"

namespace plumb::ops {
namespace {

using testing::Values;

class OpsMath : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = cpu::make_cpu_backend(3);
};

Values absolute(const Values& values) {
  Values out(values.size());
  for (size_t k = 0; k < values.size(); ++k) out[k] = std::abs(values[k]);
  return out;
}

// out = x · Wᵀ for rows 1..; compares bf16 and f32 outputs against the reference with the fp32 sum's bound.
void check_matmul(Backend& backend, const Weight& weight, const std::string& what) {
  const int64_t rows = 7, in = weight.in, outs = weight.out;
  const Values x = testing::random_bf16(21, rows * in, -2, 2);
  DeviceTensor x_tensor = testing::device_bf16(backend, x, {rows, in});
  const Values w = reference::weight_values(weight);
  const Values expected = reference::matmul(x, w, rows, in, outs);
  const Values magnitude = reference::matmul(absolute(x), absolute(w), rows, in, outs);
  // 16 lanes of in/16 terms each, then a 4-level tree: at most in/16 + 4 roundings on any path.
  const double gamma = (static_cast<double>(in) / 16 + 5) * std::ldexp(1.0, -24);
  DeviceTensor out_bf16 = testing::device_zeros(backend, DType::bf16, {rows, outs});
  ASSERT_TRUE(matmul(backend, x_tensor.view, weight, out_bf16.view).ok());
  testing::expect_bf16_close(
      what + " bf16 out", testing::download_values(backend, out_bf16.view), expected,
      [&](size_t k) { return gamma * magnitude[k]; }, 0.98);
  DeviceTensor out_f32 = testing::device_zeros(backend, DType::f32, {rows, outs});
  ASSERT_TRUE(matmul(backend, x_tensor.view, weight, out_f32.view).ok());
  const Values got = testing::download_values(backend, out_f32.view);
  for (size_t k = 0; k < got.size(); ++k)
    ASSERT_LE(std::abs(got[k] - expected[k]), gamma * magnitude[k])
        << what << " f32 out: index " << k << " expected " << expected[k] << " got " << got[k];
}

TEST_F(OpsMath, MatmulWithDenseWeightsMatchesTheReference) {
  const int64_t outs = 37, in = 320;
  const Values w = testing::random_bf16(22, outs * in, -1, 1);
  DeviceTensor bf16_weight = testing::device_bf16(*backend, w, {outs, in});
  check_matmul(*backend, Weight::make_dense("q_proj", bf16_weight.view), "matmul bf16 weight");
  std::vector<uint16_t> halves(w.size());
  std::vector<float> floats(w.size());
  for (size_t k = 0; k < w.size(); ++k) {
    halves[k] = f32_to_f16(static_cast<float>(w[k] * 1.37));
    floats[k] = static_cast<float>(w[k] * 1.0001);
  }
  DeviceTensor f16_weight = testing::device_tensor(*backend, DType::f16, {outs, in}, halves.data());
  check_matmul(*backend, Weight::make_dense("q_proj", f16_weight.view), "matmul f16 weight");
  DeviceTensor f32_weight = testing::device_tensor(*backend, DType::f32, {outs, in}, floats.data());
  check_matmul(*backend, Weight::make_dense("q_proj", f32_weight.view), "matmul f32 weight");
}

TEST_F(OpsMath, MatmulWithAffineWeightsMatchesTheReferenceForEveryWidthAndGroup) {
  const int64_t outs = 19, in = 384;
  for (int bits : kAffineBits) {
    for (int group : kAffineGroups) {
      const Values source = testing::random_bf16(static_cast<uint64_t>(bits * group), outs * in, -0.2, 0.2);
      std::vector<float> w(source.begin(), source.end());
      AffineTensor quantized = affine_quantize(w, outs, in, bits, group);
      DeviceTensor packed = testing::device_tensor(*backend, DType::u32, {outs, affine_row_words(in, bits)},
                                                   quantized.packed.data());
      DeviceTensor scales =
          testing::device_tensor(*backend, DType::bf16, {outs, in / group}, quantized.scales.data());
      DeviceTensor biases =
          testing::device_tensor(*backend, DType::bf16, {outs, in / group}, quantized.biases.data());
      check_matmul(*backend,
                   Weight::make_affine("down_proj", in, packed.view, scales.view, biases.view, bits, group),
                   fmt::format("matmul affine {} bits group {}", bits, group));
    }
  }
}

// PyTorch's fp32 tanh-GELU loses relative accuracy for very negative gates: 1 + tanh(inner) cancels, leaving
// an absolute error near 2^-23 * |gate| / 2 (tanhf's and the sum's rounding) that bf16 then keeps.
void check_geglu(Backend& backend, double gate_low, double gate_high, double exact_fraction) {
  const int64_t rows = 6, width = 300;
  const Values gate = testing::random_bf16(31, rows * width, gate_low, gate_high);
  const Values up = testing::random_bf16(32, rows * width, -3, 3);
  DeviceTensor gate_tensor = testing::device_bf16(backend, gate, {rows, width});
  DeviceTensor up_tensor = testing::device_bf16(backend, up, {rows, width});
  DeviceTensor out = testing::device_zeros(backend, DType::bf16, {rows, width});
  ASSERT_TRUE(geglu(backend, gate_tensor.view, up_tensor.view, out.view).ok());
  const Values expected = reference::geglu(gate, up);
  // One bf16 step of gelu (2^-7 of the product) plus fp32's absolute error in gelu, times |up|.
  const auto slack = [&](size_t k) {
    return std::ldexp(1.0, -7) * std::abs(expected[k]) + std::ldexp(1.0, -22) * std::abs(gate[k] * up[k]);
  };
  testing::expect_bf16_close(fmt::format("geglu gate in [{}, {})", gate_low, gate_high),
                             testing::download_values(backend, out.view), expected, slack, exact_fraction);
}

TEST_F(OpsMath, GegluMatchesTheReference) {
  check_geglu(*backend, -3, 6, 0.99);
  check_geglu(*backend, -9, -3, 0.0);
}

TEST_F(OpsMath, AddAndScaleAreExactAndRunInPlace) {
  const int64_t rows = 4, width = 96;
  const Values a = testing::random_bf16(41, rows * width, -100, 100);
  Values b = testing::random_bf16(42, rows * width, -1, 1);
  for (size_t k = 0; k < b.size(); k += 7) b[k] = -a[k];  // exact cancellations give +0
  DeviceTensor a_tensor = testing::device_bf16(*backend, a, {rows, width});
  DeviceTensor b_tensor = testing::device_bf16(*backend, b, {rows, width});
  ASSERT_TRUE(add(*backend, a_tensor.view, b_tensor.view, a_tensor.view).ok());
  const Values sum = reference::add(a, b);
  testing::expect_bf16_exact("add in place", testing::download_values(*backend, a_tensor.view), sum);
  const Values summed = testing::download_values(*backend, a_tensor.view);
  ASSERT_TRUE(scale(*backend, a_tensor.view, 0.7371f, a_tensor.view).ok());
  testing::expect_bf16_exact("scale in place", testing::download_values(*backend, a_tensor.view),
                             reference::scale(summed, 0.7371));
}

TEST_F(OpsMath, SoftCapMatchesTheReferenceToBf16AndF32) {
  const int64_t rows = 3, width = 500;
  const Values x = testing::random_bf16(51, rows * width, -200, 200);
  DeviceTensor x_tensor = testing::device_bf16(*backend, x, {rows, width});
  const Values expected = reference::soft_cap(x, 30.0);
  for (const DType dtype : {DType::bf16, DType::f32}) {
    DeviceTensor out = testing::device_zeros(*backend, dtype, {rows, width});
    ASSERT_TRUE(soft_cap(*backend, x_tensor.view, 30.0f, out.view).ok());
    testing::expect_bf16_close(
        fmt::format("soft_cap to {}", dtype_name(dtype)), testing::download_values(*backend, out.view),
        expected, [&](size_t k) { return std::ldexp(1.0, -7) * std::abs(expected[k]); }, 0.99);
  }
}

TEST_F(OpsMath, ArgmaxTakesTheLowestIdOfTiesAndSkipsNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Values x = {1, 3, 3, 2, nan, 5, 5, -1, nan, nan, nan, nan, -0.0, 0.0, -7, 0.0};
  for (const DType dtype : {DType::bf16, DType::f32}) {
    std::vector<float> floats(x.begin(), x.end());
    DeviceTensor x_tensor = dtype == DType::f32
                                ? testing::device_tensor(*backend, dtype, {4, 4}, floats.data())
                                : testing::device_bf16(*backend, x, {4, 4});
    DeviceTensor out = testing::device_zeros(*backend, DType::i32, {4});
    ASSERT_TRUE(argmax(*backend, x_tensor.view, out.view).ok());
    const Values got = testing::download_values(*backend, out.view);
    const std::vector<int32_t> expected = reference::argmax(x, 4, 4);
    EXPECT_EQ(expected, (std::vector<int32_t>{1, 1, 0, 0}));
    for (size_t r = 0; r < 4; ++r) EXPECT_EQ(got[r], expected[r]) << dtype_name(dtype) << " row " << r;
  }
}

}  // namespace
}  // namespace plumb::ops
