// Row ops on CUDA against the CPU backend: add, scale, embed_rows, kv_write (one cache, and many streams'
// caches in one call), argmax and rms_norm bit for bit
// (NaN equal to NaN: CUDA's NaN payload is canonical); geglu, soft_cap and norm_rope, whose tanh/cos/sin are
// library functions, equal the fp32 steps evaluated with one of the values within the functions' documented
// 2 ulp of the correctly rounded result.
#include <cmath>
#include <random>

#include "core/half.hpp"
#include "cuda_test_util.hpp"
#include "ops/kv_streams.hpp"

namespace plumb::cuda {
namespace {

using testing::cpu;
using testing::gpu;

// Every bf16 bit pattern appears (NaN, infinities, -0, subnormals), then ordinary values.
std::vector<uint16_t> all_patterns_then_random(size_t count, uint64_t seed) {
  std::vector<uint16_t> bits(count);
  std::mt19937_64 engine(seed);
  for (size_t k = 0; k < count; ++k)
    bits[k] = k < 65536 ? static_cast<uint16_t>((k * 40503u + seed) & 0xffffu)
                        : f32_to_bf16(std::uniform_real_distribution<float>(-8.0f, 8.0f)(engine));
  return bits;
}

bool same_bf16(uint16_t a, uint16_t b) {
  return a == b || (std::isnan(bf16_to_f32(a)) && std::isnan(bf16_to_f32(b)));
}

std::vector<uint16_t> as_u16(const std::vector<uint8_t>& bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  std::memcpy(out.data(), bytes.data(), out.size() * 2);
  return out;
}

void expect_same_bf16(const std::string& what, const std::vector<uint8_t>& got,
                      const std::vector<uint8_t>& want) {
  const std::vector<uint16_t> g = as_u16(got), e = as_u16(want);
  ASSERT_EQ(g.size(), e.size());
  size_t failures = 0;
  for (size_t k = 0; k < g.size(); ++k)
    if (!same_bf16(g[k], e[k]) && failures++ < 8)
      ADD_FAILURE() << fmt::format("{}: index {} expected bits {:#06x}, got {:#06x}, bound exact", what, k,
                                   e[k], g[k]);
  EXPECT_EQ(failures, 0u) << what;
}

// Runs a two-input row op on a backend: a, b bf16 [rows, width] -> out bf16 [rows, width].
using RowOp = Status (*)(ops::Backend&, const TensorView&, const TensorView&, const TensorView&);

std::vector<uint8_t> run_pair(ops::Backend& backend, RowOp op, const std::vector<uint16_t>& a,
                              const std::vector<uint16_t>& b, int64_t rows, int64_t width) {
  DeviceTensor ta = ops::testing::device_tensor(backend, DType::bf16, {rows, width}, a.data());
  DeviceTensor tb = ops::testing::device_tensor(backend, DType::bf16, {rows, width}, b.data());
  DeviceTensor out = ops::testing::device_zeros(backend, DType::bf16, {rows, width});
  EXPECT_TRUE(op(backend, ta.view, tb.view, out.view).ok());
  return ops::testing::download_bytes(backend, out.view);
}

TEST(CudaRows, AddAndScaleEqualTheCpuBitForBit) {
  PLUMB_GPU_OR_SKIP();
  const int64_t rows = 37, width = 3000;
  const auto a = all_patterns_then_random(rows * width, 1), b = all_patterns_then_random(rows * width, 7);
  expect_same_bf16("add", run_pair(*gpu(), ops::add, a, b, rows, width),
                   run_pair(cpu(), ops::add, a, b, rows, width));
  // Rows of odd width take the element-a-thread kernel, 16-byte rows the vector one.
  expect_same_bf16("add, odd width", run_pair(*gpu(), ops::add, a, b, 1, rows * width - 1),
                   run_pair(cpu(), ops::add, a, b, 1, rows * width - 1));
  for (float factor : {0.5f, 1.7f, -3.0e30f}) {
    const auto scale = [factor](ops::Backend& backend, const std::vector<uint16_t>& x) {
      DeviceTensor tx = ops::testing::device_tensor(backend, DType::bf16, {rows, width}, x.data());
      DeviceTensor out = ops::testing::device_zeros(backend, DType::bf16, {rows, width});
      EXPECT_TRUE(ops::scale(backend, tx.view, factor, out.view).ok());
      return ops::testing::download_bytes(backend, out.view);
    };
    expect_same_bf16(fmt::format("scale {}", factor), scale(*gpu(), a), scale(cpu(), a));
  }
}

// The fp32 steps of op(x[, y]) for each allowed value of the library function; true when `got` is one of
// them.
template <class Steps>
bool one_of_candidates(uint16_t got, float exact_function_value, Steps steps) {
  float candidate = std::nextafter(std::nextafter(exact_function_value, -INFINITY), -INFINITY);
  for (int step = 0; step < 5; ++step, candidate = std::nextafter(candidate, INFINITY))
    if (same_bf16(got, f32_to_bf16(steps(candidate)))) return true;
  return false;
}

TEST(CudaRows, GegluAndSoftCapAreTheFp32StepsWithTanhWithinTwoUlp) {
  PLUMB_GPU_OR_SKIP();
  const int64_t rows = 9, width = 20000;
  const auto gate = all_patterns_then_random(rows * width, 3), up = all_patterns_then_random(rows * width, 5);
  const std::vector<uint8_t> got_bytes = run_pair(*gpu(), ops::geglu, gate, up, rows, width);
  const std::vector<uint16_t> got = as_u16(got_bytes);
  constexpr float kBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
  size_t failures = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const float g = bf16_to_f32(gate[k]), u = bf16_to_f32(up[k]);
    const float inner = kBeta * (g + 0.044715f * (g * g * g));
    const auto steps = [&](float t) { return round_bf16(0.5f * g * (1.0f + t)) * u; };
    if (!one_of_candidates(got[k], static_cast<float>(std::tanh(static_cast<double>(inner))), steps) &&
        failures++ < 8)
      ADD_FAILURE() << fmt::format("geglu: index {} gate {} up {}: got {:#06x}, bound tanh within 2 ulp", k,
                                   g, u, got[k]);
  }
  // The same elements as one row of odd width take the element-a-thread kernel: the same bits.
  auto odd_gate = gate, odd_up = up;
  odd_gate.push_back(gate[0]);
  odd_up.push_back(up[0]);
  std::vector<uint8_t> odd =
      run_pair(*gpu(), ops::geglu, odd_gate, odd_up, 1, static_cast<int64_t>(odd_gate.size()));
  odd.resize(got_bytes.size());  // the appended element has no 16-byte twin
  expect_same_bf16("geglu, one odd row against 16-byte rows", odd, got_bytes);
  for (DType out_dtype : {DType::bf16, DType::f32}) {
    DeviceTensor x = ops::testing::device_tensor(*gpu(), DType::bf16, {rows, width}, gate.data());
    DeviceTensor out = ops::testing::device_zeros(*gpu(), out_dtype, {rows, width});
    ASSERT_TRUE(ops::soft_cap(*gpu(), x.view, 30.0f, out.view).ok());
    const std::vector<uint8_t> bytes = ops::testing::download_bytes(*gpu(), out.view);
    for (size_t k = 0; k < gate.size(); ++k) {
      uint16_t bits = 0;
      if (out_dtype == DType::f32) {
        float value = 0;
        std::memcpy(&value, bytes.data() + 4 * k, 4);
        bits = f32_to_bf16(value);
        EXPECT_TRUE(std::isnan(value) || value == bf16_to_f32(bits)) << "soft_cap f32 holds bf16 values";
      } else {
        std::memcpy(&bits, bytes.data() + 2 * k, 2);
      }
      const float scaled = round_bf16(bf16_to_f32(gate[k]) / 30.0f);
      const auto steps = [](float t) { return round_bf16(t) * 30.0f; };
      if (!one_of_candidates(bits, static_cast<float>(std::tanh(static_cast<double>(scaled))), steps) &&
          failures++ < 8)
        ADD_FAILURE() << fmt::format("soft_cap: index {} x {}: got {:#06x}, bound tanh within 2 ulp", k,
                                     bf16_to_f32(gate[k]), bits);
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST(CudaRows, EmbedRowsEqualTheCpuForBf16AndEveryAffineFormat) {
  PLUMB_GPU_OR_SKIP();
  const int64_t vocab = 300, hidden = 384;
  const Values table = ops::testing::random_bf16(11, vocab * hidden, -3, 3);
  std::vector<int32_t> ids = {0, 299, 5, 5, 17, 150, 298, 1};
  const auto run = [&](ops::Backend& backend, const testing::DeviceWeight& w) {
    DeviceTensor id_tensor = ops::testing::device_i32(backend, ids);
    DeviceTensor out = ops::testing::device_zeros(backend, DType::bf16, {8, hidden});
    EXPECT_TRUE(ops::embed_rows(backend, id_tensor.view, w.weight, 61.968f, out.view).ok());
    return ops::testing::download_bytes(backend, out.view);
  };
  expect_same_bf16("embed bf16", run(*gpu(), testing::dense_weight(*gpu(), table, vocab, hidden)),
                   run(cpu(), testing::dense_weight(cpu(), table, vocab, hidden)));
  const std::vector<float> floats(table.begin(), table.end());
  for (int bits : ops::kAffineBits)
    for (int group : ops::kAffineGroups) {
      const ops::AffineTensor q = ops::affine_quantize(floats, vocab, hidden, bits, group);
      expect_same_bf16(fmt::format("embed affine {} bits group {}", bits, group),
                       run(*gpu(), testing::affine_weight(*gpu(), q, vocab, hidden, bits, group)),
                       run(cpu(), testing::affine_weight(cpu(), q, vocab, hidden, bits, group)));
    }
}

TEST(CudaRows, KvWriteAndArgmaxEqualTheCpu) {
  PLUMB_GPU_OR_SKIP();
  const int64_t capacity = 11, kv_heads = 3, dim = 40, rows = 6;
  const Values keys = ops::testing::random_bf16(21, rows * kv_heads * dim, -2, 2);
  const Values values = ops::testing::random_bf16(22, rows * kv_heads * dim, -2, 2);
  const std::vector<int32_t> positions = {20, 21, 22, 23, 24, 25};  // wraps the ring at 22
  const auto write = [&](ops::Backend& backend) {
    DeviceTensor ck = ops::testing::device_zeros(backend, DType::bf16, {capacity, kv_heads, dim});
    DeviceTensor cv = ops::testing::device_zeros(backend, DType::bf16, {capacity, kv_heads, dim});
    DeviceTensor k = ops::testing::device_bf16(backend, keys, {rows, kv_heads, dim});
    DeviceTensor v = ops::testing::device_bf16(backend, values, {rows, kv_heads, dim});
    DeviceTensor p = ops::testing::device_i32(backend, positions);
    EXPECT_TRUE(ops::kv_write(backend, {ck.view, cv.view, 26}, p.view, k.view, v.view).ok());
    std::vector<uint8_t> bytes = ops::testing::download_bytes(backend, ck.view);
    const std::vector<uint8_t> more = ops::testing::download_bytes(backend, cv.view);
    bytes.insert(bytes.end(), more.begin(), more.end());
    return bytes;
  };
  testing::expect_same_bits("kv_write", write(*gpu()), write(cpu()), 2);
  // Rows with ties, NaNs, -0 and +0, infinities, and a row of NaN only.
  const int64_t width = 70000, argmax_rows = 5;
  std::vector<uint16_t> x = all_patterns_then_random(argmax_rows * width, 9);
  for (int64_t k = 0; k < width; ++k) x[4 * width + k] = 0x7fc1;
  // Row 1 ties 1.0 at every seventh column; row 4 is NaN only.
  for (int64_t k = width; k < 2 * width; ++k) x[k] = k % 7 == 0 ? 0x3f80 : 0x3f00;
  for (DType dtype : {DType::bf16, DType::f32}) {
    const auto run = [&](ops::Backend& backend) {
      std::vector<float> floats(x.size());
      for (size_t k = 0; k < x.size(); ++k) floats[k] = bf16_to_f32(x[k]);
      DeviceTensor t = dtype == DType::bf16
                           ? ops::testing::device_tensor(backend, dtype, {argmax_rows, width}, x.data())
                           : ops::testing::device_tensor(backend, dtype, {argmax_rows, width}, floats.data());
      DeviceTensor out = ops::testing::device_zeros(backend, DType::i32, {argmax_rows});
      EXPECT_TRUE(ops::argmax(backend, t.view, out.view).ok());
      return ops::testing::download_bytes(backend, out.view);
    };
    testing::expect_same_bits(fmt::format("argmax {}", dtype_name(dtype)), run(*gpu()), run(cpu()), 4);
  }
}

// Past 64 streams (the kernel's segment table) the launch is split; an empty stream is skipped.
TEST(CudaRows, KvWriteOverManyStreamsEqualsAWritePerStream) {
  PLUMB_GPU_OR_SKIP();
  for (const auto& [kv_heads, dim] : {std::pair<int64_t, int64_t>{2, 24}, {8, 256}})
    for (int64_t decode_streams : {0, 32, 70, 150}) {
      ops::testing::KvStreamsCase c = ops::testing::kv_streams_case(decode_streams);
      c.kv_heads = kv_heads;
      c.dim = dim;
      const ops::testing::KvStreamsInputs in =
          ops::testing::kv_streams_inputs(c, static_cast<uint64_t>(70 + dim));
      const std::vector<uint16_t> expected = ops::testing::kv_streams_expected(c, in);
      const std::string what = fmt::format("{} streams of [{}, {}]", c.streams.size(), kv_heads, dim);
      ops::testing::expect_same_cache_bits(what + ", one call on the GPU",
                                           ops::testing::run_kv_streams(*gpu(), c, in, true), expected);
      ops::testing::expect_same_cache_bits(what + ", a call per stream on the GPU",
                                           ops::testing::run_kv_streams(*gpu(), c, in, false), expected);
      ops::testing::expect_same_cache_bits(what + ", one call on the CPU",
                                           ops::testing::run_kv_streams(cpu(), c, in, true), expected);
    }
}

}  // namespace
}  // namespace plumb::cuda
