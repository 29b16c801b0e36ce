// `plumb run` through the engine: --no-drafts (the serial reference) and the engine options give the same
// tokens; a bad engine option exits with code 2.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/run_plumb.hpp"
#include "engine_fixture.hpp"

namespace plumb::engine {
namespace {

// Runs the plumb executable on the tiny checkpoint; returns (exit code, stdout).
std::pair<int, std::string> plumb_run(const std::string& arguments) {
  return plumb::testing::run_plumb("run " + testing::tiny_dir().string() + " " + arguments);
}

nlohmann::json run_json(const std::string& arguments) {
  const auto [code, out] = plumb_run(arguments + " --json");
  EXPECT_EQ(code, 0) << arguments;
  auto reply = nlohmann::json::parse(out, nullptr, false);
  EXPECT_TRUE(reply.is_object()) << arguments << ": " << out;
  return reply;
}

TEST(EngineCli, NoDraftsAndEngineOptionsGiveTheSameTokens) {
  for (const std::string sampling : {"", " --temperature 0.8 --seed 5"}) {
    const std::string prompt = "--tokens 2,400,401,402,400,401,402,400 --max-tokens 24" + sampling;
    const nlohmann::json serial = run_json(prompt + " --no-drafts");
    ASSERT_TRUE(serial["tokens"].is_array());
    EXPECT_EQ(serial["drafts"]["proposed"], 0) << "--no-drafts proposed drafts";
    for (const std::string options :
         {"", " --drafts copies --parallel 4", " --drafts none --prompt-cache-gib 1"}) {
      const nlohmann::json reply = run_json(prompt + options);
      EXPECT_EQ(reply["tokens"], serial["tokens"]) << "options '" << options << "'" << sampling;
      EXPECT_EQ(reply["token_sha"], serial["token_sha"]) << "options '" << options << "'" << sampling;
    }
  }
  EXPECT_EQ(plumb_run("--tokens 2,400 --drafts sometimes").first, 2);
  EXPECT_EQ(plumb_run("--tokens 2,400 --parallel 0").first, 2);
}

}  // namespace
}  // namespace plumb::engine
