// The engine's parts on their own: copy drafts, stop-string hold-back, the depth rule, the prompt cache.
#include <gtest/gtest.h>

#include "engine/depth_rule.hpp"
#include "engine/drafter.hpp"
#include "engine/prompt_cache.hpp"
#include "engine/stop_text.hpp"
#include "engine_fixture.hpp"

namespace plumb::engine {
namespace {

TEST(CopyDraft, ProposesWhatFollowedTheLongestEarlierMatch) {
  // Suffix "1 2" occurred at 0..1 (followed by 3 4) and "9 1 2" at 5..7 (followed by 5 6): the longer wins.
  const std::vector<int32_t> context = {1, 2, 3, 4, 9, 9, 1, 2, 5, 6, 7, 9, 1, 2};
  EXPECT_EQ(copy_draft(context, 3, 2, 1000), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(copy_draft(context, 1, 2, 1000), (std::vector<int32_t>{5}));
}

TEST(CopyDraft, PrefersTheLatestOfEquallyLongMatches) {
  const std::vector<int32_t> context = {4, 1, 2, 3, 5, 1, 2, 6, 1, 2};
  EXPECT_EQ(copy_draft(context, 2, 2, 1000), (std::vector<int32_t>{6, 1}));
}

TEST(CopyDraft, NothingBelowTheMinimumMatchOrBeyondTheLookback) {
  const std::vector<int32_t> context = {7, 1, 8, 2, 1};
  EXPECT_TRUE(copy_draft(context, 4, 2, 1000).empty());
  EXPECT_EQ(copy_draft(context, 2, 1, 1000), (std::vector<int32_t>{8, 2}));
  EXPECT_TRUE(copy_draft(context, 2, 1, 2).empty());
  EXPECT_TRUE(copy_draft(std::vector<int32_t>{5}, 3, 1, 1000).empty());
}

TEST(CopyDraft, ARepeatingRunKeepsItsPeriodPastTheContext) {
  const std::vector<int32_t> context = {3, 4, 5, 3, 4, 5, 3, 4};
  EXPECT_EQ(copy_draft(context, 7, 2, 1000), (std::vector<int32_t>{5, 3, 4, 5, 3, 4, 5}));
}

TEST(StopText, HoldsBackOnlyWhatCouldBeginAStop) {
  const std::vector<std::string> stops = {"END", "xy"};
  EXPECT_EQ(stop_prefix_suffix("abcE", stops), 1u);
  EXPECT_EQ(stop_prefix_suffix("abEN", stops), 2u);
  EXPECT_EQ(stop_prefix_suffix("abx", stops), 1u);
  EXPECT_EQ(stop_prefix_suffix("abc", stops), 0u);
  EXPECT_EQ(stop_prefix_suffix("", stops), 0u);
}

TEST(StopText, EndsAtTheTokenThatCompletesTheStop) {
  const text::Tokenizer& tokenizer = testing::tiny_tokenizer();
  auto ids = tokenizer.encode("hello world again");
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  auto whole = tokenizer.decode(*ids);
  ASSERT_TRUE(whole.ok());
  const size_t cut = whole->find("wor");
  ASSERT_NE(cut, std::string::npos) << *whole;
  StopText text(tokenizer, true, {"wor"});
  std::string shown;
  size_t stopped_at = ids->size();
  for (size_t i = 0; i < ids->size(); ++i) {
    auto step = text.push((*ids)[i]);
    ASSERT_TRUE(step.ok());
    shown += step->text;
    if (step->stopped) {
      stopped_at = i;
      break;
    }
  }
  ASSERT_LT(stopped_at, ids->size()) << "the stop string was never seen in '" << *whole << "'";
  EXPECT_EQ(shown, whole->substr(0, cut));
  // The stop completes at the first token whose prefix text contains it.
  auto before = tokenizer.decode(std::span(*ids).first(stopped_at));
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->find("wor"), std::string::npos) << "stopped one token late";
}

TEST(StopText, AByteRunSplitByASkippedSpecialTokenIsTheWholeDecode) {
  // ':' '*' (a byte token), a skipped special token, then invalid bytes: the bytes on both sides of the
  // special are one run, so the reply's text is the whole decode, and the '*' never shows on its own.
  const text::Tokenizer& tokenizer = testing::tiny_tokenizer();
  for (const std::vector<int32_t>& ids :
       {std::vector<int32_t>{390, 150, 57, 293}, std::vector<int32_t>{390, 150, 57, 293, 293, 390}}) {
    auto whole = tokenizer.decode(ids, true);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    StopText text(tokenizer, true, {});
    std::string shown;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto step = text.push(ids[i]);
      ASSERT_TRUE(step.ok()) << "id index " << i << ": " << step.error().message;
      shown += step->text;
    }
    auto rest = text.finish();
    ASSERT_TRUE(rest.ok()) << rest.error().message;
    shown += rest->text;
    EXPECT_EQ(shown, *whole) << ids.size() << " ids";
  }
}

TEST(DepthRule, DeepWhenRowsAreCheapAndDraftsHold) {
  RoundCost weight_bound;  // a GPU decode: 10 ms a round, 0.05 ms a row
  for (int64_t rows : {1, 4, 16, 2, 8, 1, 12})
    weight_bound.observe(rows, 0.010 + 0.00005 * static_cast<double>(rows));
  EXPECT_NEAR(weight_bound.per_row(), 0.00005, 1e-9);
  EXPECT_NEAR(weight_bound.fixed(), 0.010, 1e-9);
  EXPECT_EQ(choose_depth(0.95, weight_bound, 1, 15), 15);
  // A draft costs 0.5% of a round here, so only an acceptance below that leaves the depth at zero.
  EXPECT_EQ(choose_depth(0.001, weight_bound, 1, 15), 0);
  RoundCost row_bound;  // a CPU: every row costs as much as the round
  for (int64_t rows : {1, 4, 16, 2, 8}) row_bound.observe(rows, 0.010 * static_cast<double>(rows));
  EXPECT_EQ(choose_depth(0.9, row_bound, 1, 15), 0);
}

TEST(DepthRule, AcceptanceFollowsWhatWasAccepted) {
  Acceptance acceptance;
  EXPECT_DOUBLE_EQ(acceptance.rate(), 0.5);
  for (int i = 0; i < 50; ++i) acceptance.observe(4, 4);
  EXPECT_GT(acceptance.rate(), 0.95);
  // A failure counts once per proposal, a success once per accepted draft: 50 failed proposals bring it
  // down to about a quarter.
  for (int i = 0; i < 50; ++i) acceptance.observe(4, 0);
  EXPECT_LT(acceptance.rate(), 0.3);
}

// A state that only counts positions and bytes: enough to test the cache's choices.
class CountingState final : public LaneState {
 public:
  CountingState(int64_t end, int64_t bytes, int64_t reach) : end_(end), bytes_(bytes), reach_(reach) {}
  int64_t end() const override { return end_; }
  int64_t bytes() const override { return bytes_; }
  Status roll_back(int64_t end) override {
    end_ = end;
    return {};
  }
  bool can_resume_at(int64_t position) const override {
    return position <= end_ && end_ - position <= reach_;
  }
  Result<std::unique_ptr<LaneState>> clone() const override {
    return std::unique_ptr<LaneState>(std::make_unique<CountingState>(end_, bytes_, reach_));
  }

 private:
  int64_t end_, bytes_, reach_;
};

void keep(PromptCache& cache, std::vector<int32_t> tokens, int64_t bytes, int64_t reach = 100) {
  const auto end = static_cast<int64_t>(tokens.size());
  cache.keep(std::move(tokens), std::make_unique<CountingState>(end, bytes, reach));
}

TEST(PromptCache, ResumesTheLongestUsablePrefixLeavingOneRow) {
  PromptCache cache(1000);
  keep(cache, {1, 2, 3, 4, 5}, 10);
  keep(cache, {1, 2, 9}, 10);
  auto hit = cache.resume(std::vector<int32_t>{1, 2, 3, 4, 5});
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->resumed, 4);
  EXPECT_EQ((*hit)->state->end(), 4);
  hit = cache.resume(std::vector<int32_t>{1, 2, 9, 7});
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->resumed, 3);
  hit = cache.resume(std::vector<int32_t>{8, 1});
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());
}

TEST(PromptCache, SkipsStatesThatCannotRollBackThatFar) {
  PromptCache cache(1000);
  keep(cache, {1, 2, 3, 4, 5, 6, 7, 8}, 10, /*reach=*/2);
  auto hit = cache.resume(std::vector<int32_t>{1, 2, 3, 9});
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());
  hit = cache.resume(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 9});
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->resumed, 6);
}

TEST(PromptCache, EvictsLeastRecentlyUsedBeyondTheBudget) {
  PromptCache cache(30);
  keep(cache, {1, 1}, 10);
  keep(cache, {2, 2}, 10);
  keep(cache, {3, 3}, 10);
  ASSERT_TRUE(cache.resume(std::vector<int32_t>{1, 1, 5}).ok());  // {1, 1} is now the most recent
  keep(cache, {4, 4}, 10);                                        // evicts {2, 2}
  EXPECT_EQ(cache.entries(), 3);
  EXPECT_EQ(cache.bytes(), 30);
  EXPECT_EQ(cache.evictions(), 1u);
  auto gone = cache.resume(std::vector<int32_t>{2, 2, 5});
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  auto kept = cache.resume(std::vector<int32_t>{1, 1, 5});
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->has_value());
  keep(cache, {5, 5}, 40);  // larger than the whole budget: not kept, and nothing else lost
  EXPECT_EQ(cache.entries(), 3);
}

TEST(PromptCache, ALongerStateReplacesThePrefixesItCanStandFor) {
  PromptCache cache(1000);
  keep(cache, {1, 2, 3}, 10);
  keep(cache, {1, 2, 3, 4, 5}, 10);
  EXPECT_EQ(cache.entries(), 1);
  keep(cache, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, /*reach=*/1);  // cannot stand in for {1..5}
  EXPECT_EQ(cache.entries(), 2);
}

}  // namespace
}  // namespace plumb::engine

namespace plumb::engine {
namespace {

TEST(Gemma4Lane, ReachIsJudgedFromTheHighestWriteNotTheRolledBackEnd) {
  auto lane = testing::tiny_lane();
  ASSERT_NE(lane, nullptr);
  auto state = lane->new_state(16);  // sliding rings of window 8 - 1 + 16 = 23 slots
  ASSERT_TRUE(state.ok()) << state.error().message;
  const std::vector<int32_t> tokens = testing::prompt_tokens(64, 3);
  for (int64_t first = 0; first < 64; first += 16) {
    const LaneChunk chunk{state->get(), std::span(tokens).subspan(static_cast<size_t>(first), 16), first};
    ASSERT_TRUE(lane->forward(std::span(&chunk, 1)).ok());
  }
  EXPECT_TRUE((*state)->can_resume_at(60));
  EXPECT_FALSE((*state)->can_resume_at(26)) << "the ring holds positions 41..63 only";
  ASSERT_TRUE((*state)->roll_back(40).ok());
  // From end 40 alone the ring would seem to hold 17..39, but slots for 41..63 overwrote them.
  EXPECT_FALSE((*state)->can_resume_at(26));
  EXPECT_FALSE((*state)->can_resume_at(40));
}

}  // namespace
}  // namespace plumb::engine
