#pragma once
// Fidelity against Hugging Face transformers (tools/reference/gemma4_fixtures.py), for any backend: on every
// fixture, our logits against HF fp32 have max and mean abs error at most twice HF bf16's own against HF
// fp32, and the same top-1 on every row where HF fp32's top-1 leads by more than HF bf16's max abs error. MLX
// affine variants are held to HF on their dequantized weights the same way.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/npy.hpp"
#include "models/gemma4/config.hpp"
#include "models/gemma4/model.hpp"

namespace plumb::gemma4::testing {

inline std::filesystem::path fixture_dir() {
  if (const char* override_dir = std::getenv("PLUMB_GEMMA4_FIXTURES")) return override_dir;
  return std::filesystem::path(PLUMB_SOURCE_DIR) / "tests" / "fixtures" / "gemma4";
}

struct Errors {
  double max = 0.0;
  double mean = 0.0;
};

inline Errors errors_against(const NpyArray& reference, std::span<const float> values) {
  Errors errors;
  for (size_t i = 0; i < values.size(); ++i) {
    const double error = std::fabs(static_cast<double>(values[i]) - reference.values[i]);
    errors.max = std::max(errors.max, error);
    errors.mean += error;
  }
  errors.mean /= static_cast<double>(values.size());
  return errors;
}

// The top-1 id of a row and its lead over the runner-up.
inline std::pair<int64_t, double> top1(std::span<const float> row) {
  int64_t best = 0;
  for (int64_t i = 1; i < static_cast<int64_t>(row.size()); ++i)
    if (row[static_cast<size_t>(i)] > row[static_cast<size_t>(best)]) best = i;
  double second = -INFINITY;
  for (int64_t i = 0; i < static_cast<int64_t>(row.size()); ++i)
    if (i != best) second = std::max(second, static_cast<double>(row[static_cast<size_t>(i)]));
  return {best, row[static_cast<size_t>(best)] - second};
}

inline NpyArray read_or_fail(const std::filesystem::path& path) {
  auto array = read_npy(path.string());
  EXPECT_TRUE(array.ok()) << (array.ok() ? "" : array.error().message);
  return array.ok() ? *array : NpyArray{};
}

inline void check_variant(const std::filesystem::path& dir, const std::vector<int32_t>& tokens,
                          ops::Backend& backend) {
  const std::string name = dir.filename().string();
  auto model = load_model(dir.string(), backend);
  ASSERT_TRUE(model.ok()) << name << ": " << model.error().message;
  auto ours = score(*model, tokens, 16);
  ASSERT_TRUE(ours.ok()) << name << ": " << ours.error().message;
  const NpyArray fp32 = read_or_fail(dir / "hf_fp32.npy");
  const NpyArray bf16 = read_or_fail(dir / "hf_bf16.npy");
  const Shape expected_shape = {ours->rows, ours->vocab};
  ASSERT_EQ(fp32.shape, expected_shape) << name;
  ASSERT_EQ(bf16.shape, expected_shape) << name;
  const Errors hf = errors_against(fp32, bf16.values);
  const Errors plumb = errors_against(fp32, ours->values);
  std::printf("%-24s %s: plumb max %.5f mean %.6f | hf bf16 max %.5f mean %.6f\n", name.c_str(),
              std::string(backend.name()).c_str(), plumb.max, plumb.mean, hf.max, hf.mean);
  EXPECT_LE(plumb.max, 2.0 * hf.max) << name << ": max abs error against HF fp32 (bound: 2x HF bf16's)";
  EXPECT_LE(plumb.mean, 2.0 * hf.mean) << name << ": mean abs error against HF fp32 (bound: 2x HF bf16's)";
  for (int64_t r = 0; r < ours->rows; ++r) {
    const auto reference_row =
        std::span<const float>(fp32.values)
            .subspan(static_cast<size_t>(r * ours->vocab), static_cast<size_t>(ours->vocab));
    const auto [expected, lead] = top1(reference_row);
    if (lead <= hf.max) continue;
    const auto [got, unused] = top1(ours->row(r));
    EXPECT_EQ(got, expected) << name << ": top-1 at row " << r << " (HF fp32 lead " << lead << " > bound "
                             << hf.max << ")";
  }
}

// Checks every variant of the fixture manifest on `backend`; false (nothing checked) when there are no
// fixtures.
inline bool check_every_fixture(ops::Backend& backend) {
  const std::filesystem::path dir = fixture_dir();
  const std::filesystem::path manifest_path = dir / "manifest.json";
  if (!std::filesystem::exists(manifest_path)) return false;
  auto manifest = read_json_file(manifest_path.string());
  EXPECT_TRUE(manifest.ok()) << (manifest.ok() ? "" : manifest.error().message);
  if (!manifest.ok()) return true;
  const std::vector<int32_t> tokens = (*manifest)["tokens"].get<std::vector<int32_t>>();
  EXPECT_FALSE((*manifest)["variants"].empty());
  for (const auto& variant : (*manifest)["variants"])
    check_variant(dir / variant["name"].get<std::string>(), tokens, backend);
  return true;
}

}  // namespace plumb::gemma4::testing
