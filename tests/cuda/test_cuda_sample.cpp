// The keyed draw on CUDA against the host's (ops/sampling.hpp), id for id: rows of several widths and
// logit shapes (spread, flat, integer ties, NaN and infinities, all NaN) under a grid of options.
#include <cmath>
#include <cstring>
#include <random>

#include "core/half.hpp"
#include "cuda_test_util.hpp"
#include "ops/ops.hpp"
#include "ops/sampling.hpp"

namespace plumb::cuda {
namespace {

using testing::gpu;

enum class Shape { spread, sharp, flat, integer_ties, non_finite, all_nan };

std::vector<float> make_row(Shape shape, int64_t width, std::mt19937_64& random) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> at(0, width - 1);
  std::vector<float> row(static_cast<size_t>(width));
  for (float& value : row) {
    switch (shape) {
      case Shape::spread:
        value = round_bf16(2.0f * normal(random));
        break;
      case Shape::sharp:
        value = 12.0f * normal(random);
        break;
      case Shape::flat:
        value = 1.5f;
        break;
      case Shape::integer_ties:
        value = static_cast<float>(static_cast<int>(random() % 7) - 3);
        break;
      case Shape::non_finite:
        value = normal(random);
        break;
      case Shape::all_nan:
        value = NAN;
        break;
    }
  }
  if (shape == Shape::non_finite)
    for (int t = 0; t < 16; ++t) {
      row[static_cast<size_t>(at(random))] = NAN;
      row[static_cast<size_t>(at(random))] = -INFINITY;
      if (t % 4 == 0) row[static_cast<size_t>(at(random))] = INFINITY;
    }
  return row;
}

// Every combination of the filters, at several temperatures.
std::vector<ops::SampleParams> option_grid(std::mt19937_64& random) {
  std::vector<ops::SampleParams> grid;
  for (float temperature : {0.0f, 0.3f, 1.0f, 2.5f})
    for (int32_t top_k : {0, 1, 3, 64, 5000})
      for (float top_p : {1.0f, 0.95f, 0.3f})
        for (float min_p : {0.0f, 0.1f})
          grid.push_back(
              {temperature, top_p, min_p, top_k, random(), static_cast<int64_t>(random() % 100000)});
  return grid;
}

std::string describe(const ops::SampleParams& p) {
  return fmt::format("temperature {} top_k {} top_p {} min_p {} seed {:#x} position {}", p.temperature,
                     p.top_k, p.top_p, p.min_p, p.seed, p.position);
}

// Draws every row of `rows` (each width `width`) under params on the GPU and compares with the host.
void expect_same_draws(const std::string& what, const std::vector<float>& rows, int64_t width,
                       const std::vector<ops::SampleParams>& params) {
  const auto count = static_cast<int64_t>(params.size());
  const auto bytes = static_cast<int64_t>(sizeof(ops::SampleParams));
  DeviceTensor x = ops::testing::device_tensor(*gpu(), DType::f32, {count, width}, rows.data());
  DeviceTensor p = ops::testing::device_tensor(*gpu(), DType::u8, {count, bytes}, params.data());
  DeviceTensor ids = ops::testing::device_zeros(*gpu(), DType::i32, {count});
  const Status status = ops::sample(*gpu(), x.view, p.view, ids.view);
  ASSERT_TRUE(status.ok()) << status.error().message;
  const std::vector<uint8_t> got_bytes = ops::testing::download_bytes(*gpu(), ids.view);
  std::vector<int32_t> got(static_cast<size_t>(count));
  std::memcpy(got.data(), got_bytes.data(), got_bytes.size());
  size_t failures = 0;
  for (int64_t r = 0; r < count; ++r) {
    const std::span<const float> row(rows.data() + r * width, static_cast<size_t>(width));
    const int32_t expected = ops::draw_keyed(row, params[static_cast<size_t>(r)]);
    if (got[static_cast<size_t>(r)] != expected && failures++ < 8)
      ADD_FAILURE() << fmt::format("{}: row {} ({}) expected id {}, got {}, bound exact", what, r,
                                   describe(params[static_cast<size_t>(r)]), expected,
                                   got[static_cast<size_t>(r)]);
  }
  EXPECT_EQ(failures, 0u) << what;
}

TEST(CudaSample, EveryOptionAndRowShapeDrawsTheHostsId) {
  PLUMB_GPU_OR_SKIP();
  std::mt19937_64 random(20261130);
  for (int64_t width : {int64_t{1}, int64_t{7}, int64_t{4099}, int64_t{262144}})
    for (Shape shape :
         {Shape::spread, Shape::sharp, Shape::flat, Shape::integer_ties, Shape::non_finite, Shape::all_nan}) {
      const std::vector<ops::SampleParams> params = option_grid(random);
      std::vector<float> rows;
      for (size_t r = 0; r < params.size(); ++r) {
        const std::vector<float> row = make_row(shape, width, random);
        rows.insert(rows.end(), row.begin(), row.end());
      }
      expect_same_draws(fmt::format("width {} shape {}", width, static_cast<int>(shape)), rows, width,
                        params);
    }
}

// Many positions of one row: the draws spread over the candidates as the host's do, one for one.
TEST(CudaSample, ManyPositionsOfOneRowDrawTheHostsIds) {
  PLUMB_GPU_OR_SKIP();
  std::mt19937_64 random(7);
  const int64_t width = 262144;
  const std::vector<float> row = make_row(Shape::spread, width, random);
  std::vector<ops::SampleParams> params;
  std::vector<float> rows;
  for (int64_t position = 0; position < 64; ++position) {
    params.push_back({1.0f, 0.98f, 0.0f, 0, 42, position});
    rows.insert(rows.end(), row.begin(), row.end());
  }
  expect_same_draws("one row, 64 positions", rows, width, params);
}

}  // namespace
}  // namespace plumb::cuda
