// The stream cache's reach: a rollback is accepted only when every sliding ring still holds the window before
// the resume point, judged from the highest position ever written (slots past a rolled-back end were
// overwritten all the same).
#include <gtest/gtest.h>

#include "models/gemma4/generate.hpp"
#include "tiny_model.hpp"

namespace plumb::gemma4 {
namespace {

using testing::expect_same_bits;
using testing::load_tiny;
using testing::test_tokens;

constexpr int64_t kChunkRows = 16;  // sliding rings of window 8 - 1 + 16 = 23 slots

class Gemma4KvCache : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_ = load_tiny(TinyOptions{});
    ASSERT_NE(tiny_, nullptr);
    ASSERT_EQ(tiny_->model.config.sliding_window, 8);
  }
  const Model& model() const { return tiny_->model; }

  // Feeds `tokens` from `first` in chunks of kChunkRows; the last chunk's logits are all kept.
  Result<Logits> feed(StreamCache& cache, const std::vector<int32_t>& tokens, int64_t first) {
    Result<Logits> logits = Logits{};
    for (int64_t start = first; start < static_cast<int64_t>(tokens.size()); start += kChunkRows) {
      const int64_t rows = std::min<int64_t>(kChunkRows, static_cast<int64_t>(tokens.size()) - start);
      const StreamChunk chunk{&cache, std::span(tokens).subspan(static_cast<size_t>(start), rows), start,
                              LogitRows::all};
      logits = forward(model(), std::span(&chunk, 1));
      if (!logits.ok()) return logits;
    }
    return logits;
  }

  std::unique_ptr<testing::LoadedTiny> tiny_;
};

TEST_F(Gemma4KvCache, ReachAfterARollbackIsJudgedFromTheHighestWrite) {
  const std::vector<int32_t> tokens = test_tokens(64, 7);
  auto cache = new_stream(model(), kChunkRows);
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  ASSERT_TRUE(feed(*cache, tokens, 0).ok());
  // The rings hold positions 41..63: resuming at 48 needs 41..47, at 47 needs 40.
  EXPECT_TRUE(cache->can_resume_at(48));
  EXPECT_FALSE(cache->can_resume_at(47));
  ASSERT_TRUE(cache->roll_back(40).ok());
  // From end 40 alone the rings would seem to hold 17..39, but slots of 41..63 overwrote those.
  for (int64_t position : {40, 33, 26})
    EXPECT_FALSE(cache->can_resume_at(position)) << "position " << position << ", oldest kept 41";
  const std::vector<int32_t> rest(tokens.begin() + 40, tokens.end());
  const StreamChunk resume{&*cache, std::span(rest).first(kChunkRows), 40, LogitRows::all};
  auto refused = forward(model(), std::span(&resume, 1));
  ASSERT_FALSE(refused.ok()) << "a chunk at 40 ran on overwritten slots";
  EXPECT_NE(refused.error().message.find("rolls back past what sliding layer"), std::string::npos)
      << refused.error().message;
  // A clone keeps the same reach.
  auto twin = cache->clone(*model().backend);
  ASSERT_TRUE(twin.ok()) << twin.error().message;
  EXPECT_FALSE(twin->can_resume_at(40));
}

TEST_F(Gemma4KvCache, AnAcceptedRollbackContinuesAsAFreshRun) {
  const std::vector<int32_t> tokens = test_tokens(64, 8);
  auto scored = score(model(), tokens, kChunkRows);
  ASSERT_TRUE(scored.ok()) << scored.error().message;
  auto cache = new_stream(model(), kChunkRows);
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  std::vector<int32_t> drafted = tokens;
  for (size_t i = 50; i < drafted.size(); ++i) drafted[i] = 300 + static_cast<int32_t>(i);  // wrong drafts
  ASSERT_TRUE(feed(*cache, drafted, 0).ok());
  ASSERT_TRUE(cache->roll_back(50).ok());
  ASSERT_TRUE(cache->can_resume_at(50));
  const std::vector<int32_t> right(tokens.begin() + 50, tokens.end());
  const StreamChunk resume{&*cache, std::span(right), 50, LogitRows::all};
  auto logits = forward(model(), std::span(&resume, 1));
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  for (int64_t r = 0; r < logits->rows; ++r)
    expect_same_bits(scored->row(50 + r), logits->row(r), "resumed row " + std::to_string(50 + r));
}

}  // namespace
}  // namespace plumb::gemma4
