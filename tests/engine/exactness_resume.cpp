// E3 resumed == fresh: multi-turn conversations resumed from the prompt cache give the replies of fresh runs,
// both where I2 lets a state be resumed after its reply and where states are kept only at prompt ends;
// prompts that branch inside a kept state roll it back; a branch the sliding ring cannot reach is not
// resumed.
#include "engine_fixture.hpp"

namespace plumb::engine::testing {
namespace {

Request turn_request(std::vector<int32_t> prompt, bool seeded, int64_t max_tokens = 20) {
  Request request;
  request.prompt = std::move(prompt);
  request.max_tokens = max_tokens;
  if (seeded) {
    request.sampling.temperature = 0.8f;
    request.sampling.seed = 77;
  }
  return request;
}

Reply fresh_reply(const Request& request) {
  auto engine = tiny_engine(serial_options());
  auto reply = engine->generate(request);
  EXPECT_TRUE(reply.ok()) << reply.error().message;
  return reply.ok() ? *reply : Reply{};
}

EngineOptions cached_options() {
  EngineOptions options;
  options.parallel = 4;
  options.drafts = DraftMode::copies;
  options.background = false;
  return options;
}

struct Conversation {
  bool path_invariant;
  bool seeded;
};

void PrintTo(const Conversation& c, std::ostream* out) {
  *out << (c.path_invariant ? "after reply" : "prompt ends") << (c.seeded ? " seeded" : " greedy");
}

class ResumedEqualsFresh : public ::testing::TestWithParam<Conversation> {};

TEST_P(ResumedEqualsFresh, ThreeTurns) {
  const Conversation conversation = GetParam();
  auto engine = tiny_engine(cached_options(), conversation.path_invariant);
  std::vector<int32_t> history = prompt_tokens(23, 5);
  int64_t previous_prompt = 0, previous_reply = 0;
  for (int turn = 0; turn < 3; ++turn) {
    const Request request = turn_request(history, conversation.seeded);
    auto resumed = engine->generate(request);
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    expect_same_reply(fresh_reply(request), *resumed, "turn " + std::to_string(turn));
    // After a reply the kept state holds every computed position (the last token is never computed); without
    // I2 it holds the previous prompt.
    const int64_t expected_cached = turn == 0                     ? 0
                                    : conversation.path_invariant ? previous_prompt + previous_reply - 1
                                                                  : previous_prompt;
    EXPECT_EQ(resumed->cached_tokens, expected_cached) << "turn " << turn;
    previous_prompt = static_cast<int64_t>(history.size());
    previous_reply = static_cast<int64_t>(resumed->tokens.size());
    history.insert(history.end(), resumed->tokens.begin(), resumed->tokens.end());
    const std::vector<int32_t> user = prompt_tokens(9, 100 + static_cast<uint32_t>(turn));
    history.insert(history.end(), user.begin() + 1, user.end());
  }
}

INSTANTIATE_TEST_SUITE_P(Exactness, ResumedEqualsFresh,
                         ::testing::Values(Conversation{true, false}, Conversation{true, true},
                                           Conversation{false, false}, Conversation{false, true}),
                         [](const auto& info) {
                           return std::string(info.param.path_invariant ? "after_reply" : "prompt_ends") +
                                  (info.param.seeded ? "_seeded" : "_greedy");
                         });

TEST(ResumedEqualsFreshBranches, RollsBackInsideAKeptState) {
  auto engine = tiny_engine(cached_options());
  const std::vector<int32_t> base = prompt_tokens(40, 8);
  auto first = engine->generate(turn_request(base, true));
  ASSERT_TRUE(first.ok()) << first.error().message;
  // The same prompt again (a regenerate), a shorter one, and one that branches three tokens before its end.
  std::vector<int32_t> branch(base.begin(), base.end() - 3);
  branch.push_back(130);
  const std::vector<std::vector<int32_t>> prompts = {
      base, std::vector<int32_t>(base.begin(), base.end() - 10), branch};
  const int64_t expected_cached[] = {39, 29, 37};
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Request request = turn_request(prompts[i], true);
    auto resumed = engine->generate(request);
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    expect_same_reply(fresh_reply(request), *resumed, "branch " + std::to_string(i));
    EXPECT_EQ(resumed->cached_tokens, expected_cached[i]) << "branch " << i;
  }
}

TEST(ResumedEqualsFreshBranches, ABranchPastTheSlidingRingIsComputedAfresh) {
  EngineOptions options = cached_options();
  options.max_round_rows = 16;  // a short ring: window - 1 + 16 slots in sliding layers
  options.prompt_chunk_rows = 16;
  options.max_draft_depth = 7;
  auto engine = tiny_engine(options);
  const std::vector<int32_t> base = prompt_tokens(30, 9);
  Request first = turn_request(base, false, 60);
  first.stop_at_eos = false;
  ASSERT_TRUE(engine->generate(first).ok());
  // Resuming at position 29 would need the ring to reach back past 60 newer positions.
  const Request request = turn_request(base, false);
  auto resumed = engine->generate(request);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  expect_same_reply(fresh_reply(request), *resumed, "past the ring");
  EXPECT_EQ(resumed->cached_tokens, 0);
}

}  // namespace
}  // namespace plumb::engine::testing
