// Matmul on CUDA: within the fp32 accumulation range of the float64 reference; affine weights give exactly
// the bits of the dense weight they dequantize to; a row's bits never depend on how many rows share the call
// (1 to 128 rows, and 1100 rows where one block runs all K splits) or on the alignment of x; the decode
// kernel (up to 32 rows) gives the tiled kernel's bits for every format it takes; repeats are identical.
#include <cmath>
#include <random>

#include "core/half.hpp"
#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

using testing::decode_gpu;
using testing::gpu;
using testing::ring_gpu;
using testing::tiled_gpu;

std::vector<uint8_t> run_matmul(ops::Backend& backend, const Weight& weight, const Values& x, int64_t rows,
                                DType out_dtype = DType::bf16) {
  DeviceTensor tx = ops::testing::device_bf16(backend, x, {rows, weight.in});
  DeviceTensor out = ops::testing::device_zeros(backend, out_dtype, {rows, weight.out});
  const Status status = ops::matmul(backend, tx.view, weight, out.view);
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
  return ops::testing::download_bytes(backend, out.view);
}

Values to_values(const std::vector<uint8_t>& bytes, DType dtype) {
  if (dtype == DType::bf16) return ops::testing::bytes_to_values(bytes);
  Values values(bytes.size() / 4);
  for (size_t k = 0; k < values.size(); ++k) {
    float value = 0;
    std::memcpy(&value, bytes.data() + 4 * k, 4);
    values[k] = value;
  }
  return values;
}

// Tensor cores add each k16 step's 16 exact products to the accumulator after aligning them to the largest
// and truncating, at most one unit in the last place of the largest per addend: twice fp32's rounding bound
// per addition, hence 2 gamma(k + 16 + splits) times sum |x w|.
void expect_in_range(const std::string& what, const Values& got, const Values& x, const Values& w,
                     int64_t rows, int64_t in, int64_t out, bool bf16_out) {
  const Values reference = ops::reference::matmul(x, w, rows, in, out);
  Values magnitude(reference.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t k = 0; k < in; ++k) sum += std::abs(x[r * in + k] * w[o * in + k]);
      magnitude[r * out + o] = sum;
    }
  const double relative = 2.0 * testing::gamma_f32(static_cast<double>(in + 16 + 64));
  testing::expect_within(
      what, got, reference, [&](size_t k) { return relative * magnitude[k]; }, bf16_out);
}

TEST(CudaMatmul, DenseIsWithinTheFp32Range) {
  PLUMB_GPU_OR_SKIP();
  struct Shape3 {
    int64_t rows, out, in;
  };
  for (const Shape3& s : {Shape3{1, 200, 96}, Shape3{7, 130, 3840}, Shape3{33, 300, 520},
                          Shape3{100, 64, 1000}, Shape3{300, 257, 200}}) {
    const Values x = ops::testing::random_bf16(s.rows, s.rows * s.in, -2, 2);
    const Values w = ops::testing::random_bf16(s.out, s.out * s.in, -1, 1);
    const testing::DeviceWeight weight = testing::dense_weight(*gpu(), w, s.out, s.in);
    for (DType dtype : {DType::bf16, DType::f32}) {
      const std::string what = fmt::format("matmul {}x{}x{} {}", s.rows, s.out, s.in, dtype_name(dtype));
      expect_in_range(what, to_values(run_matmul(*gpu(), weight.weight, x, s.rows, dtype), dtype), x, w,
                      s.rows, s.in, s.out, dtype == DType::bf16);
    }
  }
}

TEST(CudaMatmul, AffineEqualsTheDenseWeightItDequantizesTo) {
  PLUMB_GPU_OR_SKIP();
  const int64_t out = 150, in = 640, rows = 5;
  const Values w = ops::testing::random_bf16(31, out * in, -1, 1);
  const Values x = ops::testing::random_bf16(32, rows * in, -2, 2);
  const std::vector<float> floats(w.begin(), w.end());
  for (int bits : ops::kAffineBits)
    for (int group : ops::kAffineGroups) {
      const ops::AffineTensor q = ops::affine_quantize(floats, out, in, bits, group);
      const testing::DeviceWeight affine = testing::affine_weight(*gpu(), q, out, in, bits, group);
      Weight host = Weight::make_affine(
          "w", in,
          TensorView::contiguous(const_cast<uint32_t*>(q.packed.data()), DType::u32, {out, in * bits / 32}),
          TensorView::contiguous(const_cast<uint16_t*>(q.scales.data()), DType::bf16, {out, in / group}),
          TensorView::contiguous(const_cast<uint16_t*>(q.biases.data()), DType::bf16, {out, in / group}),
          bits, group);
      const Values dequantized = ops::reference::weight_values(host);
      const testing::DeviceWeight dense = testing::dense_weight(*gpu(), dequantized, out, in);
      const std::string what = fmt::format("affine {} bits group {}", bits, group);
      const std::vector<uint8_t> got = run_matmul(*gpu(), affine.weight, x, rows);
      testing::expect_same_bits(what, got, run_matmul(*gpu(), dense.weight, x, rows), 2);
      expect_in_range(what, ops::testing::bytes_to_values(got), x, dequantized, rows, in, out, true);
    }
}

TEST(CudaMatmul, HalfAndFloatWeightsAreWithinTheFp32Range) {
  PLUMB_GPU_OR_SKIP();
  const int64_t out = 90, in = 333, rows = 4;
  const Values x = ops::testing::random_bf16(41, rows * in, -2, 2);
  Values w = ops::testing::random_bf16(42, out * in, -1, 1);
  std::vector<float> floats(w.begin(), w.end());
  DeviceTensor f32 = ops::testing::device_tensor(*gpu(), DType::f32, {out, in}, floats.data());
  expect_in_range(
      "matmul f32 weight",
      ops::testing::bytes_to_values(run_matmul(*gpu(), Weight::make_dense("w", f32.view), x, rows)), x, w,
      rows, in, out, true);
  std::vector<uint16_t> halves(floats.size());
  for (size_t k = 0; k < floats.size(); ++k) halves[k] = f32_to_f16(floats[k]);
  for (size_t k = 0; k < floats.size(); ++k) w[k] = f16_to_f32(halves[k]);
  DeviceTensor f16 = ops::testing::device_tensor(*gpu(), DType::f16, {out, in}, halves.data());
  expect_in_range(
      "matmul f16 weight",
      ops::testing::bytes_to_values(run_matmul(*gpu(), Weight::make_dense("w", f16.view), x, rows)), x, w,
      rows, in, out, true);
}

// Rows [0, count) of a call over the first `count` rows of x equal the same rows of the 128-row call.
void expect_rows_independent(const std::string& what, const Weight& weight, const Values& x) {
  const int64_t in = weight.in, out_bytes = weight.out * 2;
  const std::vector<uint8_t> all = run_matmul(*gpu(), weight, x, 128);
  for (int64_t count = 1; count <= 128; ++count) {
    const Values part(x.begin(), x.begin() + count * in);
    const std::vector<uint8_t> got = run_matmul(*gpu(), weight, part, count);
    const std::vector<uint8_t> want(all.begin(), all.begin() + count * out_bytes);
    testing::expect_same_bits(fmt::format("{}: {} rows", what, count), got, want, 2);
    if (::testing::Test::HasFailure()) return;
  }
  // 1100 rows: one block runs every K split of a row tile; rows 0..127 are the same rows as above.
  Values tall = ops::testing::random_bf16(99, 1100 * in, -2, 2);
  std::copy(x.begin(), x.end(), tall.begin());
  const std::vector<uint8_t> got = run_matmul(*gpu(), weight, tall, 1100);
  testing::expect_same_bits(what + ": 1100 rows",
                            std::vector<uint8_t>(got.begin(), got.begin() + 128 * out_bytes), all, 2);
  // The second row tile (a pair's second block in the bf16 ring) and the last, partial one (a pair whose
  // second block has no rows) equal calls of those rows alone.
  for (const auto& [first, count] : {std::pair<int64_t, int64_t>{128, 128}, {1024, 76}}) {
    const Values rows(tall.begin() + first * in, tall.begin() + (first + count) * in);
    testing::expect_same_bits(
        fmt::format("{}: 1100 rows, rows {} to {}", what, first, first + count - 1),
        std::vector<uint8_t>(got.begin() + first * out_bytes, got.begin() + (first + count) * out_bytes),
        run_matmul(*gpu(), weight, rows, count), 2);
  }
  testing::expect_same_bits(what + ": repeat", run_matmul(*gpu(), weight, x, 128), all, 2);
}

TEST(CudaMatmul, RowBitsDoNotDependOnTheRowCount) {
  PLUMB_GPU_OR_SKIP();
  const int64_t out = 4096, in = 3840;  // Gemma 4 12B q_proj: 32 output tiles, K split 8 ways
  const Values w = ops::testing::random_bf16(51, out * in, -1, 1);
  const Values x = ops::testing::random_bf16(52, 128 * in, -2, 2);
  expect_rows_independent("dense", testing::dense_weight(*gpu(), w, out, in).weight, x);
  const std::vector<float> floats(w.begin(), w.end());
  // Each format the decode kernel dequantizes in registers, with each group size it reads per half-row.
  struct Format {
    int bits, group;
  };
  for (const Format f : {Format{4, 64}, Format{8, 128}, Format{2, 32}}) {
    const ops::AffineTensor q = ops::affine_quantize(floats, out, in, f.bits, f.group);
    expect_rows_independent(fmt::format("affine {} bits group {}", f.bits, f.group),
                            testing::affine_weight(*gpu(), q, out, in, f.bits, f.group).weight, x);
  }
}

TEST(CudaMatmul, RowBitsDoNotDependOnTheRowCountForLongSplits) {
  PLUMB_GPU_OR_SKIP();
  // Gemma 4 12B down_proj: K split 9 ways of 27 tiles, more x than the decode kernel stages at once for 17
  // to 32 rows.
  const int64_t out = 3840, in = 15360;
  const Values w = ops::testing::random_bf16(53, out * in, -1, 1);
  const Values x = ops::testing::random_bf16(54, 128 * in, -2, 2);
  expect_rows_independent("down_proj dense", testing::dense_weight(*gpu(), w, out, in).weight, x);
  const std::vector<float> floats(w.begin(), w.end());
  const ops::AffineTensor q = ops::affine_quantize(floats, out, in, 4, 64);
  expect_rows_independent("down_proj affine 4 bits", testing::affine_weight(*gpu(), q, out, in, 4, 64).weight,
                          x);
}

// x as a column slice starting at column 1 of a [rows, in + 3] tensor: 2-byte aligned rows, odd stride.
std::vector<uint8_t> run_unaligned(ops::Backend& backend, const Weight& weight, const Values& x,
                                   int64_t rows) {
  const int64_t in = weight.in;
  Values wide(static_cast<size_t>(rows * (in + 3)), 0.0);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(x.begin() + r * in, in, wide.begin() + r * (in + 3) + 1);
  DeviceTensor t = ops::testing::device_bf16(backend, wide, {rows, in + 3});
  TensorView slice = t.view;
  slice.shape = {rows, in};
  slice.data = static_cast<uint16_t*>(t.view.data) + 1;
  DeviceTensor result = ops::testing::device_zeros(backend, DType::bf16, {rows, weight.out});
  EXPECT_TRUE(ops::matmul(backend, slice, weight, result.view).ok());
  return ops::testing::download_bytes(backend, result.view);
}

TEST(CudaMatmul, UnalignedRowsGiveTheSameBits) {
  PLUMB_GPU_OR_SKIP();
  const int64_t out = 260, in = 384, rows = 9;
  const Values w = ops::testing::random_bf16(61, out * in, -1, 1);
  const Values x = ops::testing::random_bf16(62, rows * in, -2, 2);
  const testing::DeviceWeight weight = testing::dense_weight(*gpu(), w, out, in);
  const std::vector<uint8_t> aligned = run_matmul(*gpu(), weight.weight, x, rows);
  testing::expect_same_bits("unaligned x", run_unaligned(*gpu(), weight.weight, x, rows), aligned, 2);
  // The decode kernel takes affine weights only.
  const std::vector<float> floats(w.begin(), w.end());
  const ops::AffineTensor q = ops::affine_quantize(floats, out, in, 4, 64);
  const testing::DeviceWeight decode = testing::affine_weight(*decode_gpu(), q, out, in, 4, 64);
  const testing::DeviceWeight tiled = testing::affine_weight(*tiled_gpu(), q, out, in, 4, 64);
  testing::expect_same_bits("unaligned x, decode kernel",
                            run_unaligned(*decode_gpu(), decode.weight, x, rows),
                            run_matmul(*tiled_gpu(), tiled.weight, x, rows), 2);
}

// The decode kernel on both its weight sources: 4-bit weights in the decode layout, and every weight read
// from its packed rows through the ring.
struct DecodeBackend {
  const char* name;
  CudaBackend* backend;
};

std::vector<DecodeBackend> decode_backends() {
  return {{"decode layout", decode_gpu()}, {"decode ring", ring_gpu()}};
}

// An affine weight's shape and format.
struct AffineCase {
  int64_t out, in;
  int bits, group;
};

// The decode kernel's rows, on either weight source, equal the tiled kernel's, bit for bit, for each affine
// format it takes (4-bit codes with groups of 32, 64 and 128 in the decode layout), for one
// and several K splits, splits longer than the x it stages at once, shapes off the tile grid (absent
// columns, a k tail, odd group counts), and f32 output; weights of spread 1 give scales above 2^-5 (packed
// pairs), weights of spread 0.05 scales below it (subnormal pairs for 4-bit codes).
TEST(CudaMatmul, DecodeKernelGivesTheTiledKernelsBits) {
  PLUMB_GPU_OR_SKIP();
  ASSERT_NE(decode_gpu(), nullptr);
  ASSERT_NE(ring_gpu(), nullptr);
  ASSERT_NE(tiled_gpu(), nullptr);
  for (const float spread : {1.0f, 0.05f})
    for (const AffineCase c :
         {AffineCase{4096, 3840, 4, 64}, AffineCase{4096, 3840, 8, 128}, AffineCase{4096, 3840, 2, 32},
          AffineCase{3840, 15360, 4, 64}, AffineCase{3840, 15360, 2, 32}, AffineCase{150, 640, 4, 32},
          AffineCase{130, 544, 4, 32}, AffineCase{262, 256, 8, 64}, AffineCase{33000, 2304, 4, 64},
          AffineCase{131, 320, 4, 64}, AffineCase{1000, 2176, 4, 128}}) {
      const Values w = ops::testing::random_bf16(71, c.out * c.in, -spread, spread);
      const Values x = ops::testing::random_bf16(72, 32 * c.in, -2, 2);
      const std::vector<float> floats(w.begin(), w.end());
      const ops::AffineTensor q = ops::affine_quantize(floats, c.out, c.in, c.bits, c.group);  // once a case
      const auto weight_on = [&](ops::Backend& backend) {
        return testing::affine_weight(backend, q, c.out, c.in, c.bits, c.group);
      };
      const testing::DeviceWeight tiled = weight_on(*tiled_gpu());
      for (const DecodeBackend decode : decode_backends()) {
        const testing::DeviceWeight weight = weight_on(*decode.backend);
        ASSERT_EQ(weight.weight.decode_layout.data != nullptr, decode.backend == decode_gpu() && c.bits == 4)
            << decode.name << ": 4-bit weights, and those alone, get the decode layout";
        for (int64_t rows : {1, 2, 7, 16, 17, 31, 32}) {
          const Values part(x.begin(), x.begin() + rows * c.in);
          const std::string what = fmt::format("{} {}x{} bits {} group {} spread {}: {} rows", decode.name,
                                               c.out, c.in, c.bits, c.group, spread, rows);
          testing::expect_same_bits(what, run_matmul(*decode.backend, weight.weight, part, rows),
                                    run_matmul(*tiled_gpu(), tiled.weight, part, rows), 2);
          if (rows == 17)
            testing::expect_same_bits(what + " f32",
                                      run_matmul(*decode.backend, weight.weight, part, rows, DType::f32),
                                      run_matmul(*tiled_gpu(), tiled.weight, part, rows, DType::f32), 4);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
}

// A decode layout is written by kernels, and the decode kernel reads weights before it waits for the kernel
// ahead of it (dependent launches), so prepare_weight must return with the layout written, as an upload does
// (a race the contract's rerun gate once caught in a grouped call): the stream is idle when it returns, even
// for a weight whose layout takes tens of microseconds to write, and a matmul launched at once gives the
// ring's bits.
TEST(CudaMatmul, ADecodeLayoutIsWrittenWhenPrepareWeightReturns) {
  PLUMB_GPU_OR_SKIP();
  ASSERT_NE(decode_gpu(), nullptr);
  ASSERT_NE(ring_gpu(), nullptr);
  const int64_t out = 15360, in = 3840, rows = 3;
  const Values w = ops::testing::random_bf16(75, out * in, -0.05, 0.05);
  const Values x = ops::testing::random_bf16(76, rows * in, -2, 2);
  const ops::AffineTensor q = ops::affine_quantize(std::vector<float>(w.begin(), w.end()), out, in, 4, 64);
  const std::vector<uint8_t> expected =
      run_matmul(*ring_gpu(), testing::affine_weight(*ring_gpu(), q, out, in, 4, 64).weight, x, rows);
  CudaBackend& backend = *decode_gpu();
  DeviceTensor tx = ops::testing::device_bf16(backend, x, {rows, in});
  DeviceTensor result = ops::testing::device_zeros(backend, DType::bf16, {rows, out});
  for (int i = 0; i < 4; ++i) {
    // The tensors' uploads, then the layout's kernels, then at once the matmul.
    const testing::DeviceWeight weight = testing::affine_weight(backend, q, out, in, 4, 64);
    ASSERT_EQ(cudaStreamQuery(backend.stream()), cudaSuccess) << "work still queued after prepare_weight";
    ASSERT_NE(weight.weight.decode_layout.data, nullptr);
    const Status status = ops::matmul(backend, tx.view, weight.weight, result.view);
    ASSERT_TRUE(status.ok()) << status.error().message;
    testing::expect_same_bits(fmt::format("matmul right after preparation {}", i),
                              ops::testing::download_bytes(backend, result.view), expected, 2);
    if (::testing::Test::HasFailure()) return;
  }
}

// bf16(scale * q + bias) rounded once from the exact value, as a packed bf16x2 fma would give it.
float round_once(double exact) {
  if (exact == 0.0) return static_cast<float>(exact);
  int exponent = 0;
  const double fraction = std::frexp(exact, &exponent);
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(fraction, 8)), exponent - 8));
}

// Groups where one rounding of scale * q + bias differs from the reference's two (a bias below 2^-24 of
// scale * q at a bf16 midpoint), biases of -0 and scales too large for the fma form, sprinkled over the
// columns of every third warp: the decode kernel takes its f32 path for their tiles, and packed (spread 1)
// or subnormal (spread 0.05) pairs for the other warps' tiles, and still gives the tiled kernel's bits.
TEST(CudaMatmul, DecodeKernelKeepsTwoRoundingsWhereOneWouldDiffer) {
  PLUMB_GPU_OR_SKIP();
  ASSERT_NE(decode_gpu(), nullptr);
  ASSERT_NE(ring_gpu(), nullptr);
  ASSERT_NE(tiled_gpu(), nullptr);
  for (const float spread : {1.0f, 0.05f})
    for (const AffineCase c :
         {AffineCase{1024, 3840, 4, 64}, AffineCase{1024, 3840, 4, 32}, AffineCase{1024, 3840, 2, 32}}) {
      const Values w = ops::testing::random_bf16(73, c.out * c.in, -spread, spread);
      ops::AffineTensor q =
          ops::affine_quantize(std::vector<float>(w.begin(), w.end()), c.out, c.in, c.bits, c.group);
      const int64_t groups = c.in / c.group;
      int64_t differing = 0;
      for (int64_t e = 0; e < c.out * groups; ++e) {
        if (e / groups % 48 >= 16) continue;  // warps 1 and 2 of every three keep their pairs' form
        if (e % 7 == 3) {
          q.scales[e] = f32_to_bf16(1.0078125f);  // 3 * scale is a bf16 midpoint
          q.biases[e] = f32_to_bf16(-0x1p-26f);
          for (int64_t j = 0; j < c.group; ++j) {
            const uint32_t code = ops::affine_code(q.packed.data() + e / groups * (c.in * c.bits / 32),
                                                   e % groups * c.group + j, c.bits);
            const double exact = 1.0078125 * code - 0x1p-26;
            differing += round_once(exact) != ops::affine_value(q.scales[e], q.biases[e], code);
          }
        } else if (e % 17 == 1) {
          q.biases[e] = 0x8000;  // -0
        } else if (e % 23 == 2) {
          q.scales[e] = f32_to_bf16(0x1p101f);
        }
      }
      ASSERT_GT(differing, 0) << "the planted groups must hold codes where one rounding differs";
      const testing::DeviceWeight tiled =
          testing::affine_weight(*tiled_gpu(), q, c.out, c.in, c.bits, c.group);
      const Values x = ops::testing::random_bf16(74, 17 * c.in, -2, 2);
      for (const DecodeBackend decode : decode_backends()) {
        const testing::DeviceWeight weight =
            testing::affine_weight(*decode.backend, q, c.out, c.in, c.bits, c.group);
        for (int64_t rows : {1, 7, 17}) {
          const Values part(x.begin(), x.begin() + rows * c.in);
          const std::string what =
              fmt::format("{} {}x{} bits {} group {} spread {} with planted groups: {} rows", decode.name,
                          c.out, c.in, c.bits, c.group, spread, rows);
          testing::expect_same_bits(what, run_matmul(*decode.backend, weight.weight, part, rows),
                                    run_matmul(*tiled_gpu(), tiled.weight, part, rows), 2);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
}

}  // namespace
}  // namespace plumb::cuda
