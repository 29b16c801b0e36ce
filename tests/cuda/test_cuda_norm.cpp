// rms_norm, residual_norm and head_norms on CUDA equal the CPU backend bit for bit (same 16-lane sum order,
// correctly rounded division and sqrt); norm_rope's rotation equals the fp32 steps on those normed values
// with cos and sin each within 2 ulp.
#include <cmath>
#include <optional>
#include <random>
#include <tuple>

#include "core/half.hpp"
#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

using testing::cpu;
using testing::gpu;

struct NormCase {
  int64_t rows, heads, dim;
  bool weighted;
};

std::vector<uint8_t> run_norm(ops::Backend& backend, const NormCase& c, const Values& x, const Values& w) {
  const Shape shape = c.heads == 1 ? Shape{c.rows, c.dim} : Shape{c.rows, c.heads, c.dim};
  DeviceTensor tx = ops::testing::device_bf16(backend, x, shape);
  DeviceTensor tw = ops::testing::device_bf16(backend, w, {c.dim});
  DeviceTensor out = ops::testing::device_zeros(backend, DType::bf16, shape);
  EXPECT_TRUE(ops::rms_norm(backend, tx.view, c.weighted ? &tw.view : nullptr, 1e-6f, out.view).ok());
  return ops::testing::download_bytes(backend, out.view);
}

TEST(CudaNorm, RmsNormEqualsTheCpuBitForBit) {
  PLUMB_GPU_OR_SKIP();
  for (const NormCase& c :
       {NormCase{33, 1, 3840, true}, NormCase{5, 16, 256, true}, NormCase{7, 4, 512, false},
        NormCase{3, 1, 100, true}, NormCase{300, 1, 5376, true}, NormCase{2, 1, 1048, true}}) {
    const Values x = ops::testing::random_bf16(c.rows + c.dim, c.rows * c.heads * c.dim, -6, 6);
    const Values w = ops::testing::random_bf16(c.dim, c.dim, -2, 2);
    testing::expect_same_bits(fmt::format("rms_norm {}x{}x{}", c.rows, c.heads, c.dim),
                              run_norm(*gpu(), c, x, w), run_norm(cpu(), c, x, w), 2);
  }
}

// residual_norm in place (h_out = h) on `backend`: h_out's bytes, then next's.
std::vector<uint8_t> run_residual(ops::Backend& backend, int64_t rows, int64_t dim,
                                  std::optional<float> factor, uint64_t seed) {
  const Values h = ops::testing::random_bf16(seed, rows * dim, -6, 6);
  const Values o = ops::testing::random_bf16(seed + 1, rows * dim, -6, 6);
  const Values post = ops::testing::random_bf16(seed + 2, dim, -2, 2);
  const Values next_w = ops::testing::random_bf16(seed + 3, dim, -2, 2);
  DeviceTensor th = ops::testing::device_bf16(backend, h, {rows, dim});
  DeviceTensor to = ops::testing::device_bf16(backend, o, {rows, dim});
  DeviceTensor tpost = ops::testing::device_bf16(backend, post, {dim});
  DeviceTensor tnext = ops::testing::device_bf16(backend, next_w, {dim});
  DeviceTensor next = ops::testing::device_zeros(backend, DType::bf16, {rows, dim});
  EXPECT_TRUE(
      ops::residual_norm(backend, th.view, to.view, tpost.view, factor, tnext.view, 1e-6f, th.view, next.view)
          .ok());
  std::vector<uint8_t> bytes = ops::testing::download_bytes(backend, th.view);
  const std::vector<uint8_t> normed = ops::testing::download_bytes(backend, next.view);
  bytes.insert(bytes.end(), normed.begin(), normed.end());
  return bytes;
}

// The fused kernels (one block a row, its threads on 8 adjacent columns where rows of up to 4096 columns
// allow 16-byte accesses, else on columns 512 apart; from 64 rows a warp a row where the vectors allow
// 16-byte loads and whole 256-column chunks) and, past 12288 columns, the four launches they stand for,
// against the CPU's four steps.
TEST(CudaNorm, ResidualNormEqualsTheCpuStepsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  struct Case {
    int64_t rows, dim;
    std::optional<float> factor;
  };
  for (const Case& c :
       {Case{1, 3840, std::nullopt}, Case{32, 3840, 0.59765625f}, Case{5, 5376, 1.5f}, Case{3, 100, 0.25f},
        Case{2, 12296, 0.75f}, Case{64, 3840, 0.59765625f}, Case{131, 5376, std::nullopt},
        Case{67, 256, 1.5f}, Case{80, 100, 0.25f}, Case{1, 12288, 0.75f}, Case{3, 4104, std::nullopt},
        Case{7, 4096, 1.5f}, Case{4, 24, std::nullopt}}) {
    const uint64_t seed = static_cast<uint64_t>(c.rows * 7 + c.dim);
    testing::expect_same_bits(fmt::format("residual_norm {}x{}", c.rows, c.dim),
                              run_residual(*gpu(), c.rows, c.dim, c.factor, seed),
                              run_residual(cpu(), c.rows, c.dim, c.factor, seed), 2);
  }
}

// head_norms in place (q, k and, unless the values come from the keys, v) on `backend`: q, k and v's bytes.
// With cache_slots, each row is a stream of its own whose key and value go to its cache of that many slots
// (head_norms with caches), and the caches' bytes follow.
std::vector<uint8_t> run_head_norms(ops::Backend& backend, int64_t rows, int64_t heads, int64_t kv_heads,
                                    const ops::RopeSpec& rope, bool values_from_keys, uint64_t seed,
                                    int64_t cache_slots = 0) {
  const int64_t dim = rope.head_dim;
  DeviceTensor q = ops::testing::device_bf16(
      backend, ops::testing::random_bf16(seed, rows * heads * dim, -4, 4), {rows, heads, dim});
  DeviceTensor k = ops::testing::device_bf16(
      backend, ops::testing::random_bf16(seed + 1, rows * kv_heads * dim, -4, 4), {rows, kv_heads, dim});
  DeviceTensor v = ops::testing::device_bf16(
      backend, ops::testing::random_bf16(seed + 2, rows * kv_heads * dim, -4, 4), {rows, kv_heads, dim});
  DeviceTensor q_weight =
      ops::testing::device_bf16(backend, ops::testing::random_bf16(seed + 3, dim, -2, 2), {dim});
  DeviceTensor k_weight =
      ops::testing::device_bf16(backend, ops::testing::random_bf16(seed + 4, dim, -2, 2), {dim});
  std::vector<int32_t> positions(static_cast<size_t>(rows));
  std::mt19937 engine(static_cast<uint32_t>(seed));
  for (int32_t& p : positions) p = static_cast<int32_t>(engine() % 200000);
  DeviceTensor at = ops::testing::device_i32(backend, positions);
  std::vector<DeviceTensor> caches;
  std::vector<ops::KvSegment> segments;
  for (int64_t r = 0; r < (cache_slots > 0 ? rows : 0); ++r) {
    for (int half = 0; half < 2; ++half)
      caches.push_back(ops::testing::device_zeros(backend, DType::bf16, {cache_slots, kv_heads, dim}));
    segments.push_back({r, 1, {caches[2 * r].view, caches[2 * r + 1].view, positions[r] + int64_t{1}}});
  }
  const TensorView& values = values_from_keys ? k.view : v.view;
  EXPECT_TRUE((cache_slots > 0
                   ? ops::head_norms(backend, q.view, q_weight.view, k.view, k_weight.view, values, at.view,
                                     rope, 1e-6f, q.view, k.view, v.view, segments)
                   : ops::head_norms(backend, q.view, q_weight.view, k.view, k_weight.view, values, at.view,
                                     rope, 1e-6f, q.view, k.view, v.view))
                  .ok());
  return testing::head_norms_bytes(backend, q, k, v, caches);
}

// One launch for q, k and v against the CPU's three ops, with the values from their own rows and from the raw
// keys (rotated in place by the same launch): the register kernel's head_dims (pairs across lanes at 8 and
// 16, within a lane from 32; odd vector counts leave a half-warp idle) and the generic kernel's (512, 40).
TEST(CudaNorm, HeadNormsEqualTheCpuOpsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  struct Case {
    int64_t rows, heads, kv_heads;
    ops::RopeSpec rope;
    bool values_from_keys;
  };
  for (const Case& c :
       {Case{1, 16, 8, {10000.0, 256, 1.0, 1.0}, false}, Case{32, 16, 1, {1000000.0, 512, 0.25, 1.0}, true},
        Case{5, 32, 16, {10000.0, 256, 1.0, 1.0}, false}, Case{3, 4, 2, {10000.0, 40, 1.0, 2.0}, true},
        Case{3, 3, 2, {10000.0, 16, 1.0, 1.0}, true}, Case{7, 5, 2, {10000.0, 8, 1.0, 1.0}, false},
        Case{4, 3, 1, {10000.0, 32, 1.0, 1.0}, false}, Case{9, 7, 3, {1000000.0, 64, 0.25, 1.0}, true},
        Case{2, 5, 4, {10000.0, 128, 1.0, 8.0}, false}}) {
    const uint64_t seed = static_cast<uint64_t>(c.rows * 13 + c.rope.head_dim);
    testing::expect_same_bits(
        fmt::format("head_norms {}x({}+{})x{}", c.rows, c.heads, c.kv_heads, c.rope.head_dim),
        run_head_norms(*gpu(), c.rows, c.heads, c.kv_heads, c.rope, c.values_from_keys, seed),
        run_head_norms(cpu(), c.rows, c.heads, c.kv_heads, c.rope, c.values_from_keys, seed), 2);
  }
}

// The keys and values written to each stream's cache in the same launch (up to 48 streams) or by kv_write's
// launch after it (more) equal the CPU's head_norms and kv_write.
TEST(CudaNorm, HeadNormsWithCachesEqualTheCpuOpsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  const ops::RopeSpec sliding{10000.0, 256, 1.0, 1.0}, global{1000000.0, 512, 0.25, 1.0};
  for (const auto& [rows, kv_heads, rope, from_keys] :
       {std::tuple{int64_t{1}, int64_t{8}, sliding, false}, std::tuple{int64_t{32}, int64_t{1}, global, true},
        std::tuple{int64_t{48}, int64_t{8}, sliding, false},
        std::tuple{int64_t{50}, int64_t{8}, sliding, false}}) {
    const uint64_t seed = static_cast<uint64_t>(rows * 7 + rope.head_dim);
    testing::expect_same_bits(
        fmt::format("head_norms {}x(16+{})x{} into caches", rows, kv_heads, rope.head_dim),
        run_head_norms(*gpu(), rows, 16, kv_heads, rope, from_keys, seed, 8),
        run_head_norms(cpu(), rows, 16, kv_heads, rope, from_keys, seed, 8), 2);
  }
}

// The five fp32 values within 2 ulp of the correctly rounded f(theta).
std::vector<float> near(double exact) {
  std::vector<float> values;
  float value = std::nextafter(std::nextafter(static_cast<float>(exact), -INFINITY), -INFINITY);
  for (int step = 0; step < 5; ++step, value = std::nextafter(value, INFINITY)) values.push_back(value);
  return values;
}

void expect_rope(const ops::RopeSpec& spec, int64_t rows, int64_t heads, uint64_t seed) {
  const int64_t dim = spec.head_dim, half = dim / 2;
  const Values x = ops::testing::random_bf16(seed, rows * heads * dim, -4, 4);
  const Values w = ops::testing::random_bf16(seed + 1, dim, -2, 2);
  std::vector<int32_t> positions(static_cast<size_t>(rows));
  std::mt19937 engine(static_cast<uint32_t>(seed));
  for (int32_t& p : positions) p = static_cast<int32_t>(engine() % 200000);
  DeviceTensor tx = ops::testing::device_bf16(*gpu(), x, {rows, heads, dim});
  DeviceTensor tw = ops::testing::device_bf16(*gpu(), w, {dim});
  DeviceTensor tp = ops::testing::device_i32(*gpu(), positions);
  DeviceTensor out = ops::testing::device_zeros(*gpu(), DType::bf16, {rows, heads, dim});
  ASSERT_TRUE(ops::norm_rope(*gpu(), tx.view, &tw.view, 1e-6f, tp.view, spec, out.view).ok());
  const Values got = ops::testing::download_values(*gpu(), out.view);
  const NormCase norm_case{rows, heads, dim, true};
  const Values normed = ops::testing::bytes_to_values(run_norm(cpu(), norm_case, x, w));
  const std::vector<float> inv_freq = ops::rope_inv_freq(spec);
  size_t failures = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t at = (r * heads + h) * dim + i;
        const auto first = static_cast<float>(normed[at]), second = static_cast<float>(normed[at + half]);
        const float theta = static_cast<float>(positions[r]) * inv_freq[i];
        bool low_found = false, high_found = false;
        for (float c : near(std::cos(static_cast<double>(theta))))
          for (float s : near(std::sin(static_cast<double>(theta)))) {
            const float cb = round_bf16(c), sb = round_bf16(s);
            low_found |= round_bf16(round_bf16(first * cb) + round_bf16(-second * sb)) == got[at];
            high_found |= round_bf16(round_bf16(second * cb) + round_bf16(first * sb)) == got[at + half];
          }
        if ((!low_found || !high_found) && failures++ < 8)
          ADD_FAILURE() << fmt::format(
              "norm_rope: index {} (row {}, head {}, pair {}, position {}) got {} and {}, "
              "bound cos/sin within 2 ulp",
              at, r, h, i, positions[r], got[at], got[at + half]);
      }
  EXPECT_EQ(failures, 0u);
}

TEST(CudaNorm, NormRopeIsTheFp32StepsWithCosAndSinWithinTwoUlp) {
  PLUMB_GPU_OR_SKIP();
  expect_rope({10000.0, 256, 1.0, 1.0}, 23, 16, 5);
  expect_rope({1000000.0, 512, 0.25, 1.0}, 9, 4, 6);
  expect_rope({10000.0, 40, 1.0, 2.0}, 4, 3, 7);
}

}  // namespace
}  // namespace plumb::cuda
