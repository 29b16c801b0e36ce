// plumb bench's measurements on a tiny checkpoint (CPU backend): the bytes and FLOPs it divides by, the
// prompts it shares with tools/reference/hf_bench.py, and the decode and prompt runs whose tokens it checks.
#include <gtest/gtest.h>

#include "cli/bench_model.hpp"
#include "models/gemma4/tiny_model.hpp"

namespace plumb::cli {
namespace {

TEST(BenchModel, PromptsAreTheSharedDeterministicIds) {
  const std::vector<int32_t> ids = bench_prompt(3, 6, 1000);
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(ids[0], 2);
  for (int64_t i = 1; i < 6; ++i)
    EXPECT_EQ(ids[static_cast<size_t>(i)], 3 + (i * 7919 + 3 * 104729) % 997) << "index " << i;
  EXPECT_EQ(bench_prompt(3, 6, 1000), ids);
}

TEST(BenchModel, CostsCountEveryWeightAndKeyOnce) {
  auto tiny = gemma4::testing::load_tiny({});
  ASSERT_NE(tiny, nullptr);
  const gemma4::Model& model = tiny->model;
  const ModelCosts costs = model_costs(model);
  // bf16 weights: two bytes a parameter, the tied head counted once more as the head.
  EXPECT_EQ(costs.weight_bytes, 2.0 * (costs.layer_params + costs.head_params));
  EXPECT_EQ(costs.head_params, static_cast<double>(model.config.vocab * model.config.hidden));
  double flops = 2.0 * 10 * costs.layer_params + 2.0 * costs.head_params, kv = 0;
  for (const gemma4::LayerSpec& layer : model.config.layers) {
    for (int64_t row = 0; row < 10; ++row) {
      const int64_t keys = layer.window > 0 ? std::min<int64_t>(row + 1, layer.window) : row + 1;
      flops += 4.0 * static_cast<double>(layer.heads * layer.head_dim * keys);
    }
    const int64_t keys = layer.window > 0 ? std::min<int64_t>(10, layer.window) : 10;
    kv += 4.0 * static_cast<double>(layer.kv_heads * layer.head_dim * keys);
  }
  EXPECT_DOUBLE_EQ(prompt_flops(model, 10), flops);
  EXPECT_DOUBLE_EQ(kv_read_bytes(model, 9), kv);
}

TEST(BenchModel, BatchedStreamsGiveTheSoloTokensAndPromptsRepeat) {
  auto tiny = gemma4::testing::load_tiny({});
  ASSERT_NE(tiny, nullptr);
  auto solo = run_decode(tiny->model, 1, 12, 5);
  ASSERT_TRUE(solo.ok()) << solo.error().message;
  EXPECT_EQ(solo->tokens[0].size(), 6u);
  EXPECT_EQ(solo->step_seconds.size(), 5u);
  auto batch = run_decode(tiny->model, 3, 12, 5);
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  ASSERT_EQ(batch->tokens.size(), 3u);
  EXPECT_EQ(batch->tokens[0], solo->tokens[0]);
  auto prompt = run_prompt(tiny->model, 20, 2);
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  EXPECT_EQ(prompt->seconds.size(), 2u);
  ASSERT_EQ(prompt->first_tokens.size(), 3u);
  EXPECT_EQ(prompt->first_tokens[0], prompt->first_tokens[2]);
}

}  // namespace
}  // namespace plumb::cli
