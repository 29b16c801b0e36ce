// `plumb bench --engine-streams` end to end on a tiny checkpoint (CPU backend): one line per (stream count,
// prompt kind, drafts), the --json record's "engine" runs, drafts-on tokens equal to drafts-off for every
// stream, and bad engine options refused with exit code 2.
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/run_plumb.hpp"
#include "core/temp_dir.hpp"

namespace plumb {
namespace {

using testing::run_plumb;

class BenchEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_plumb("make-tiny gemma4 " + (dir_ / "tiny").string()).first, 0) << "make-tiny failed";
  }
  std::string bench(const std::string& options) const {
    return "bench " + (dir_ / "tiny").string() +
           " --streams 1 --prompts 16 --decode-steps 4 --repeats 1 --copy-mib 8 --gemm-size 64" + options;
  }
  testing::TempDir dir_;
};

TEST_F(BenchEngine, DraftsOnGiveTheDraftsOffTokensInEveryStreamCount) {
  const std::string json_path = (dir_ / "bench.json").string();
  const auto [code, out] =
      run_plumb(bench(" --engine-streams 1,4 --engine-tokens 16 --engine-prompt 32 --json " + json_path));
  EXPECT_EQ(code, 0) << out;
  for (const char* streams : {"  1 streams", "  4 streams"})
    for (const char* kind : {"varied   prompts", "repeated prompts"})
      for (const char* drafts : {"drafts off:", "drafts on :"}) {
        const std::string line = fmt::format("engine {}, {}, {}", streams, kind, drafts);
        EXPECT_NE(out.find(line), std::string::npos) << "no line '" << line << "' in:\n" << out;
      }
  EXPECT_NE(out.find("drafts on as off and in every stream count"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;

  std::ifstream file(json_path);
  const nlohmann::json record = nlohmann::json::parse(file, nullptr, false);
  ASSERT_TRUE(record.is_object()) << "the --json file is not JSON";
  EXPECT_TRUE(record["failed_checks"].empty()) << record["failed_checks"].dump();
  ASSERT_TRUE(record.contains("decode") && record.contains("prompt")) << "the other sections' keys are gone";
  const nlohmann::json& runs = record["engine"]["runs"];
  ASSERT_EQ(runs.size(), 8u) << runs.dump();
  // Runs come as (off, on) pairs of one stream count and prompt kind.
  for (size_t i = 0; i + 1 < runs.size(); i += 2) {
    const nlohmann::json &off = runs[i], &on = runs[i + 1];
    EXPECT_EQ(off["drafts"], "none") << "run " << i;
    EXPECT_EQ(on["drafts"], "copies") << "run " << i + 1;
    EXPECT_EQ(off["drafts_proposed"], 0) << "run " << i;
    EXPECT_EQ(off["token_shas"], on["token_shas"]) << "run " << i << ": drafts changed a stream's tokens";
    const int64_t streams = on["streams"];
    EXPECT_EQ(on["token_shas"].size(), static_cast<size_t>(streams)) << "run " << i;
    EXPECT_EQ(on["generated_tokens"], 16 * streams) << "run " << i;
    const int64_t proposed = on["drafts_proposed"], accepted = on["drafts_accepted"];
    EXPECT_LE(accepted, proposed) << "run " << i + 1;
    if (proposed > 0) {
      EXPECT_DOUBLE_EQ(on["acceptance"].get<double>(), double(accepted) / double(proposed))
          << "run " << i + 1;
    }
  }
  // Stream 0 has the same prompt in every count: its tokens must not depend on the other streams.
  EXPECT_EQ(runs[0]["token_shas"][0], runs[4]["token_shas"][0]) << "varied prompt, 1 vs 4 streams";
  EXPECT_EQ(runs[2]["token_shas"][0], runs[6]["token_shas"][0]) << "repeated prompt, 1 vs 4 streams";
}

TEST_F(BenchEngine, WithoutEngineStreamsTheSectionIsSkipped) {
  const std::string json_path = (dir_ / "bench.json").string();
  const auto [code, out] = run_plumb(bench(" --json " + json_path));
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("engine"), std::string::npos) << out;
  std::ifstream file(json_path);
  const nlohmann::json record = nlohmann::json::parse(file, nullptr, false);
  ASSERT_TRUE(record.is_object());
  EXPECT_FALSE(record.contains("engine"));
}

TEST_F(BenchEngine, BadEngineOptionsExitWithCode2) {
  EXPECT_EQ(run_plumb(bench(" --engine-streams 1,0")).first, 2);
  EXPECT_EQ(run_plumb(bench(" --engine-streams 1 --engine-tokens 0")).first, 2);
  EXPECT_EQ(run_plumb(bench(" --engine-streams 1 --engine-prompt 0")).first, 2);
}

}  // namespace
}  // namespace plumb
