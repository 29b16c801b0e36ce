// The Gemma 4 forward (written once against the op set) on the CUDA backend, on tiny bf16 and MLX affine
// checkpoints: finite logits; step-by-step decode rows equal `score` rows bit for bit (I2), any prompt
// chunking gives the same rows (I3), a stream's rows are the same alone or batched with another stream (I1),
// and two runs are identical (I4). The largest difference from the CPU backend is printed for the record (CPU
// == CUDA is not promised).
#include <cmath>

#include "cuda_test_util.hpp"
#include "models/gemma4/tiny_model.hpp"

namespace plumb::cuda {
namespace {

using gemma4::Logits;
using gemma4::testing::expect_same_bits;
using gemma4::testing::test_tokens;

struct TinyOnGpu {
  gemma4::testing::TempDir dir{"plumb-cuda-gemma4"};
  gemma4::Model model;
};

std::unique_ptr<TinyOnGpu> load_on_gpu(const gemma4::TinyOptions& options) {
  auto tiny = std::make_unique<TinyOnGpu>();
  const Status written = gemma4::write_tiny_checkpoint(tiny->dir.path().string(), options);
  EXPECT_TRUE(written.ok()) << (written.ok() ? "" : written.error().message);
  auto model = gemma4::load_model(tiny->dir.path().string(), *testing::gpu());
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!written.ok() || !model.ok()) return nullptr;
  tiny->model = std::move(*model);
  return tiny;
}

Logits scored(const gemma4::Model& model, std::span<const int32_t> tokens, int64_t chunk_rows) {
  auto logits = gemma4::score(model, tokens, chunk_rows);
  EXPECT_TRUE(logits.ok()) << (logits.ok() ? "" : logits.error().message);
  return logits.ok() ? *logits : Logits{};
}

void expect_invariants(const gemma4::TinyOptions& options, const std::string& what) {
  auto tiny = load_on_gpu(options);
  ASSERT_NE(tiny, nullptr);
  const std::vector<int32_t> tokens = test_tokens(40, 3);
  const Logits whole = scored(tiny->model, tokens, 256);
  ASSERT_EQ(whole.rows, 40) << what;
  for (float value : whole.values) ASSERT_TRUE(std::isfinite(value)) << what << ": a logit is not finite";
  for (int64_t chunk : {1, 3, 16}) {
    const Logits chunked = scored(tiny->model, tokens, chunk);
    for (int64_t r = 0; r < whole.rows; ++r)
      expect_same_bits(whole.row(r), chunked.row(r), fmt::format("{}: chunks of {}, row {}", what, chunk, r));
  }
  const Logits again = scored(tiny->model, tokens, 256);
  for (int64_t r = 0; r < whole.rows; ++r)
    expect_same_bits(whole.row(r), again.row(r), fmt::format("{}: repeat, row {}", what, r));
  // Two streams in one forward: each stream's rows equal its rows alone.
  const std::vector<int32_t> other = test_tokens(23, 9);
  auto first = gemma4::new_stream(tiny->model), second = gemma4::new_stream(tiny->model);
  ASSERT_TRUE(first.ok() && second.ok());
  const gemma4::StreamChunk chunks[] = {{&*first, other, 0, gemma4::LogitRows::all},
                                        {&*second, tokens, 0, gemma4::LogitRows::all}};
  auto batched = gemma4::forward(tiny->model, chunks);
  ASSERT_TRUE(batched.ok()) << batched.error().message;
  ASSERT_EQ(batched->rows, 63);
  for (int64_t r = 0; r < 40; ++r)
    expect_same_bits(whole.row(r), batched->row(23 + r),
                     fmt::format("{}: batched with another stream, row {}", what, r));
  // For the record: the largest difference from the CPU backend on the same checkpoint.
  auto on_cpu = gemma4::load_model(tiny->dir.path().string(), testing::cpu());
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.error().message;
  const Logits cpu_logits = scored(*on_cpu, tokens, 256);
  double largest = 0;
  for (size_t k = 0; k < whole.values.size(); ++k)
    largest = std::max(largest, std::abs(static_cast<double>(whole.values[k]) - cpu_logits.values[k]));
  std::printf("%s: largest |cuda - cpu| logit difference %.6g over %zu logits\n", what.c_str(), largest,
              whole.values.size());
}

TEST(CudaGemma4, Bf16CheckpointKeepsTheInvariants) {
  PLUMB_GPU_OR_SKIP();
  expect_invariants({}, "bf16");
}

TEST(CudaGemma4, AffineCheckpointKeepsTheInvariants) {
  PLUMB_GPU_OR_SKIP();
  gemma4::TinyOptions options;
  options.bits = 4;
  options.group = 32;
  expect_invariants(options, "affine 4 bits");
}

}  // namespace
}  // namespace plumb::cuda
