// I1 width and I4 repeat on the CPU backend: a row's output bits are the same alone, inside batches of 2 to
// 128 rows at any index next to any other rows, with any thread count, and on every repeat.
#include <random>

#include "cpu/cpu_backend.hpp"
#include "ops/affine.hpp"
#include "ops_test_util.hpp"

namespace plumb::ops {
namespace {

using testing::Values;

constexpr int64_t kWidth = 96;

// Runs one op over `rows` input rows of kWidth bf16 values (and their positions); returns each row's output
// bytes.
using RowOp =
    std::function<std::vector<std::vector<uint8_t>>(Backend&, const Values&, const std::vector<int32_t>&)>;

std::vector<std::vector<uint8_t>> split_rows(const std::vector<uint8_t>& bytes, size_t rows) {
  std::vector<std::vector<uint8_t>> out;
  const size_t row_bytes = bytes.size() / rows;
  for (size_t r = 0; r < rows; ++r)
    out.emplace_back(bytes.begin() + r * row_bytes, bytes.begin() + (r + 1) * row_bytes);
  return out;
}

// Puts the target row at index `at` of an n-row batch of other random rows, runs the op, returns the target's
// bytes.
std::vector<uint8_t> target_in_batch(Backend& backend, const RowOp& op, const Values& target,
                                     int32_t position, size_t n, size_t at, uint64_t seed) {
  Values batch = testing::random_bf16(seed, n * kWidth, -4, 4);
  std::copy(target.begin(), target.end(), batch.begin() + static_cast<int64_t>(at * kWidth));
  std::vector<int32_t> positions(n);
  std::mt19937 engine(static_cast<uint32_t>(seed));
  for (int32_t& p : positions) p = static_cast<int32_t>(engine() % 5000);
  positions[at] = position;
  return op(backend, batch, positions)[at];
}

void expect_row_invariant(const std::string& what, const RowOp& op) {
  auto one_thread = cpu::make_cpu_backend(1);
  const Values target = testing::random_bf16(77, kWidth, -4, 4);
  const std::vector<uint8_t> alone = target_in_batch(*one_thread, op, target, 1234, 1, 0, 1);
  for (int threads : {1, 2, 5}) {
    auto backend = cpu::make_cpu_backend(threads);
    for (size_t n : {2, 3, 17, 64, 128}) {
      for (size_t at : {size_t{0}, n / 2, n - 1}) {
        EXPECT_EQ(target_in_batch(*backend, op, target, 1234, n, at, 1000 + n + at), alone)
            << what << ": row at index " << at << " of " << n << " with " << threads << " threads";
      }
    }
    EXPECT_EQ(target_in_batch(*backend, op, target, 1234, 64, 5, 9),
              target_in_batch(*backend, op, target, 1234, 64, 5, 9))
        << what << ": repeat";
  }
}

std::vector<std::vector<uint8_t>> run_matmul(Backend& backend, const Weight& weight, const Values& x) {
  const int64_t rows = static_cast<int64_t>(x.size()) / kWidth;
  DeviceTensor x_tensor = testing::device_bf16(backend, x, {rows, kWidth});
  DeviceTensor out = testing::device_zeros(backend, DType::bf16, {rows, weight.out});
  EXPECT_TRUE(matmul(backend, x_tensor.view, weight, out.view).ok());
  return split_rows(testing::download_bytes(backend, out.view), static_cast<size_t>(rows));
}

TEST(Invariants, MatmulRowsDoNotDependOnTheBatch) {
  const Values w = testing::random_bf16(3, 70 * kWidth, -1, 1);
  std::vector<uint16_t> bits = testing::to_bf16_bits(w);
  expect_row_invariant("matmul bf16", [&](Backend& backend, const Values& x, const std::vector<int32_t>&) {
    const Weight weight =
        Weight::make_dense("w", TensorView::contiguous(bits.data(), DType::bf16, {70, kWidth}));
    return run_matmul(backend, weight, x);
  });
  std::vector<float> floats(w.begin(), w.end());
  AffineTensor quantized = affine_quantize(floats, 70, kWidth, 3, 32);
  expect_row_invariant("matmul affine", [&](Backend& backend, const Values& x, const std::vector<int32_t>&) {
    const Weight weight = Weight::make_affine(
        "w", kWidth,
        TensorView::contiguous(quantized.packed.data(), DType::u32, {70, affine_row_words(kWidth, 3)}),
        TensorView::contiguous(quantized.scales.data(), DType::bf16, {70, 3}),
        TensorView::contiguous(quantized.biases.data(), DType::bf16, {70, 3}), 3, 32);
    return run_matmul(backend, weight, x);
  });
}

TEST(Invariants, NormRopeRowsDoNotDependOnTheBatch) {
  const Values w = testing::random_bf16(4, 32, -2, 2);
  expect_row_invariant("norm_rope",
                       [&](Backend& backend, const Values& x, const std::vector<int32_t>& positions) {
                         const int64_t rows = static_cast<int64_t>(positions.size());
                         DeviceTensor x_tensor = testing::device_bf16(backend, x, {rows, 3, 32});
                         DeviceTensor w_tensor = testing::device_bf16(backend, w, {32});
                         DeviceTensor p_tensor = testing::device_i32(backend, positions);
                         DeviceTensor out = testing::device_zeros(backend, DType::bf16, {rows, 3, 32});
                         EXPECT_TRUE(norm_rope(backend, x_tensor.view, &w_tensor.view, 1e-6f, p_tensor.view,
                                               {1e6, 32, 0.25, 1.0}, out.view)
                                         .ok());
                         return split_rows(testing::download_bytes(backend, out.view), positions.size());
                       });
}

TEST(Invariants, ElementwiseRowsDoNotDependOnTheBatch) {
  expect_row_invariant("rms_norm + geglu + soft_cap",
                       [](Backend& backend, const Values& x, const std::vector<int32_t>& positions) {
                         const int64_t rows = static_cast<int64_t>(positions.size());
                         DeviceTensor x_tensor = testing::device_bf16(backend, x, {rows, kWidth});
                         DeviceTensor normed = testing::device_zeros(backend, DType::bf16, {rows, kWidth});
                         EXPECT_TRUE(rms_norm(backend, x_tensor.view, nullptr, 1e-6f, normed.view).ok());
                         DeviceTensor mixed = testing::device_zeros(backend, DType::bf16, {rows, kWidth});
                         EXPECT_TRUE(geglu(backend, x_tensor.view, normed.view, mixed.view).ok());
                         DeviceTensor capped = testing::device_zeros(backend, DType::f32, {rows, kWidth});
                         EXPECT_TRUE(soft_cap(backend, mixed.view, 30.0f, capped.view).ok());
                         return split_rows(testing::download_bytes(backend, capped.view), positions.size());
                       });
}

}  // namespace
}  // namespace plumb::ops
