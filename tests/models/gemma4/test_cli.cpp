// The plumb executable on a make-tiny checkpoint: `run` with its tokenizer and chat template, keyed sampling
// reproducible by seed, token_sha as documented, and `score` writing the logits the library computes.
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/npy.hpp"
#include "core/run_plumb.hpp"
#include "engine/sampling.hpp"
#include "tiny_model.hpp"

namespace plumb::gemma4 {
namespace {

using testing::TempDir;

// Runs the plumb executable; returns (exit code, stdout).
std::pair<int, std::string> plumb(const std::string& arguments) {
  return plumb::testing::run_plumb(arguments);
}

class Gemma4Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto [code, out] = plumb("make-tiny gemma4 " + model_dir());
    ASSERT_EQ(code, 0) << out;
  }
  std::string model_dir() const { return (dir_.path() / "tiny").string(); }

  nlohmann::json run_json(const std::string& arguments) {
    const auto [code, out] = plumb("run " + model_dir() + " " + arguments + " --json");
    EXPECT_EQ(code, 0) << out;
    auto reply = nlohmann::json::parse(out, nullptr, false);
    EXPECT_TRUE(reply.is_object()) << out;
    return reply;
  }

  TempDir dir_{"plumb-gemma4-cli"};
};

TEST_F(Gemma4Cli, RunPrintsTokensTextAndTheirSha) {
  const nlohmann::json reply = run_json("--prompt 'The cat and the dog' --max-tokens 6");
  ASSERT_TRUE(reply["tokens"].is_array());
  const auto tokens = reply["tokens"].get<std::vector<int32_t>>();
  EXPECT_GE(tokens.size(), 1u);
  EXPECT_LE(tokens.size(), 6u);
  EXPECT_TRUE(reply["text"].is_string());
  EXPECT_EQ(reply["token_sha"], engine::token_sha(tokens)) << "sha256 of the ids as little-endian int32";
  EXPECT_TRUE(reply["timings"]["prompt_tokens"].get<int>() > 1) << "the prompt was tokenized";
  nlohmann::json again = run_json("--prompt 'The cat and the dog' --max-tokens 6"), first = reply;
  // Timings, and the draft counts that the depth rule sets from measured round costs, vary between runs.
  for (nlohmann::json* run : {&again, &first}) {
    run->erase("timings");
    run->erase("drafts");
  }
  EXPECT_EQ(again, first) << "two runs print the same reply but for timings and draft counts";
}

TEST_F(Gemma4Cli, GreedyAndSeededRunsRepeat) {
  nlohmann::json first = run_json("--tokens 2,400,401,402 --max-tokens 8");
  nlohmann::json second = run_json("--tokens 2,400,401,402 --max-tokens 8");
  EXPECT_EQ(first["tokens"], second["tokens"]);
  nlohmann::json sampled = run_json("--tokens 2,400,401,402 --max-tokens 12 --temperature 1.5 --seed 7");
  EXPECT_EQ(sampled["tokens"],
            run_json("--tokens 2,400,401,402 --max-tokens 12 --temperature 1.5 --seed 7")["tokens"]);
  EXPECT_EQ(sampled["seed"].get<uint64_t>(), 7u);
  // Without a seed the seed comes from the prompt ids, so the draws still repeat.
  nlohmann::json derived = run_json("--tokens 2,400,401,402 --max-tokens 12 --temperature 1.5");
  EXPECT_EQ(derived["seed"].get<uint64_t>(), engine::prompt_seed(std::vector<int32_t>{2, 400, 401, 402}));
  EXPECT_EQ(derived["tokens"],
            run_json("--tokens 2,400,401,402 --max-tokens 12 --temperature 1.5")["tokens"]);
}

TEST_F(Gemma4Cli, ChatRendersTheTemplateBeforeGenerating) {
  const nlohmann::json reply = run_json("--chat 'Hello there' --max-tokens 3");
  // <bos><|turn>user\nHello there<turn|>\n<|turn>model\n<|channel>thought\n<channel|>: more ids than the
  // message.
  EXPECT_GT(reply["timings"]["prompt_tokens"].get<int>(), 10);
}

TEST_F(Gemma4Cli, ScoreWritesTheLibraryLogits) {
  const std::string out = (dir_.path() / "logits.npy").string();
  const auto [code, printed] = plumb("score " + model_dir() + " --tokens 2,400,401,402,403 --out " + out);
  ASSERT_EQ(code, 0) << printed;
  auto array = read_npy(out);
  ASSERT_TRUE(array.ok()) << array.error().message;
  EXPECT_EQ(array->shape, (Shape{5, tiny_vocab_size()}));
  auto backend = cpu::make_cpu_backend(1);
  auto model = load_model(model_dir(), *backend);
  ASSERT_TRUE(model.ok());
  const std::vector<int32_t> tokens = {2, 400, 401, 402, 403};
  auto logits = score(*model, tokens);
  ASSERT_TRUE(logits.ok());
  testing::expect_same_bits(logits->values, array->values, "score file");
}

TEST_F(Gemma4Cli, BadInputExitsWithCodeTwo) {
  EXPECT_EQ(plumb("score " + model_dir() + " --tokens 2,abc --out /dev/null").first, 2);
  EXPECT_EQ(plumb("run " + model_dir() + " --tokens 2,999999").first, 2);
  EXPECT_EQ(plumb("run " + model_dir() + " --tokens 2 --top-p 0").first, 2);
  EXPECT_EQ(plumb("run " + model_dir()).first, 2) << "no prompt";
  EXPECT_EQ(plumb("make-tiny gemma4 " + model_dir() + "2 --bits 7").first, 2);
}

}  // namespace
}  // namespace plumb::gemma4
