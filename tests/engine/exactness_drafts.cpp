// E1 drafted == serial: every verify width 1..16, with deliberately wrong drafts planted at varied positions,
// gives the serial reply, greedy and seeded; and a control: a lane whose rows depend on the window (an I1
// break) makes the comparison fail.
#include <atomic>

#include "engine_fixture.hpp"

namespace plumb::engine::testing {
namespace {

// Proposes the serial reply's next tokens, with one wrong token planted at a position that varies from
// proposal to proposal (or none, every few proposals).
class PlantingDrafter final : public Drafter {
 public:
  PlantingDrafter(std::vector<int32_t> reference, int width)
      : reference_(std::move(reference)), width_(width) {}
  std::string_view name() const override { return "planting"; }
  std::unique_ptr<DraftSession> open(std::span<const int32_t>) override {
    return std::make_unique<Session>(*this);
  }
  int64_t planted() const { return planted_; }

 private:
  class Session final : public DraftSession {
   public:
    explicit Session(PlantingDrafter& owner) : owner_(owner) {}
    void propose(std::span<const int32_t> context, int depth, std::vector<int32_t>& drafts) override {
      const int proposal = owner_.proposals_++;
      const int plant = (proposal * 5 + owner_.width_) % (depth + 2);  // depth or depth + 1: none planted
      for (int i = 0; i < depth; ++i) {
        const size_t position = context.size() + static_cast<size_t>(i);
        int32_t token = position < owner_.reference_.size() ? owner_.reference_[position] : 7;
        if (i == plant) {
          token = (token + 1) % static_cast<int32_t>(gemma4::tiny_vocab_size());
          ++owner_.planted_;
        }
        drafts.push_back(token);
      }
    }

   private:
    PlantingDrafter& owner_;
  };
  std::vector<int32_t> reference_;
  int width_;
  std::atomic<int> proposals_{0};
  std::atomic<int64_t> planted_{0};
};

Request make_request(std::vector<int32_t> prompt, bool seeded) {
  Request request;
  request.prompt = std::move(prompt);
  request.max_tokens = 40;
  request.stop_at_eos = false;  // full-length replies give every width many windows
  if (seeded) {
    request.sampling.temperature = 0.9f;
    request.sampling.top_k = 64;
    request.sampling.seed = 1234;
  }
  return request;
}

Reply serial_reply(const Request& request) {
  auto engine = tiny_engine(serial_options());
  auto reply = engine->generate(request);
  EXPECT_TRUE(reply.ok()) << reply.error().message;
  return reply.ok() ? *reply : Reply{};
}

struct Case {
  const char* name;
  size_t prompt_length;
  bool seeded;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

class DraftedEqualsSerial : public ::testing::TestWithParam<Case> {};

TEST_P(DraftedEqualsSerial, EveryVerifyWidthWithPlantedWrongDrafts) {
  const Case& c = GetParam();
  const Request request = make_request(prompt_tokens(c.prompt_length, 11), c.seeded);
  const Reply serial = serial_reply(request);
  ASSERT_EQ(serial.tokens, plain_generate(request)) << "the serial engine differs from the plain loop";
  std::vector<int32_t> reference = request.prompt;
  reference.insert(reference.end(), serial.tokens.begin(), serial.tokens.end());
  for (int width = 1; width <= 16; ++width) {
    auto drafter = std::make_shared<PlantingDrafter>(reference, width);
    EngineOptions options = serial_options();
    options.drafter = drafter;
    options.fixed_draft_depth = width - 1;
    auto engine = tiny_engine(options);
    auto drafted = engine->generate(request);
    ASSERT_TRUE(drafted.ok()) << drafted.error().message;
    expect_same_reply(serial, *drafted, std::string(c.name) + " width " + std::to_string(width));
    if (width > 1) {
      EXPECT_GT(drafted->accepted_tokens, 0) << "width " << width << ": no draft was ever accepted";
      EXPECT_GT(drafter->planted(), 0) << "width " << width << ": no wrong draft was planted";
      EXPECT_LT(drafted->rounds, serial.rounds) << "width " << width << ": drafts saved no round";
    }
  }
}

// The prompt is P, then P's own serial reply, then P again: at the first step the copy drafter finds P
// earlier and proposes what followed it, so copies are proposed whatever the model; how many the model
// accepts is its own business (the planted test above covers acceptance at every width).
TEST_P(DraftedEqualsSerial, CopyDraftsAtEveryWidth) {
  const Case& c = GetParam();
  const std::vector<int32_t> start = prompt_tokens(c.prompt_length, 12, /*repetitive=*/true);
  const Reply first = serial_reply(make_request(start, c.seeded));
  std::vector<int32_t> prompt = start;
  prompt.insert(prompt.end(), first.tokens.begin(), first.tokens.end());
  prompt.insert(prompt.end(), start.begin() + 1, start.end());
  const Request request = make_request(prompt, c.seeded);
  const Reply serial = serial_reply(request);
  int64_t proposed = 0, accepted = 0;
  for (int width = 2; width <= 16; width += 2) {
    EngineOptions options = serial_options();
    options.drafter = std::make_shared<CopyDrafter>(/*min_match=*/1);
    options.fixed_draft_depth = width - 1;
    auto engine = tiny_engine(options);
    auto drafted = engine->generate(request);
    ASSERT_TRUE(drafted.ok()) << drafted.error().message;
    expect_same_reply(serial, *drafted, std::string(c.name) + " copies width " + std::to_string(width));
    proposed += drafted->drafted_tokens;
    accepted += drafted->accepted_tokens;
  }
  std::printf("%s: copy drafts proposed %lld, accepted %lld\n", c.name, static_cast<long long>(proposed),
              static_cast<long long>(accepted));
  EXPECT_GT(proposed, 0) << "the copy drafter never proposed, though the prompt repeats itself";
}

INSTANTIATE_TEST_SUITE_P(Exactness, DraftedEqualsSerial,
                         ::testing::Values(Case{"greedy-short", 6, false}, Case{"seeded-short", 6, true},
                                           Case{"greedy-long", 150, false}, Case{"seeded-long", 150, true}),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Draws a far-off token for every row after a window's first: what a kernel whose rows depend on the row
// count would do. E1 must see it.
class RowCountLeak final : public LaneModel {
 public:
  explicit RowCountLeak(std::unique_ptr<LaneModel> inner) : inner_(std::move(inner)) {}
  std::string_view family() const override { return inner_->family(); }
  std::string_view backend_name() const override { return inner_->backend_name(); }
  int64_t vocab() const override { return inner_->vocab(); }
  int64_t context() const override { return inner_->context(); }
  std::vector<int32_t> eos_tokens() const override { return inner_->eos_tokens(); }
  bool path_invariant() const override { return inner_->path_invariant(); }
  Result<std::unique_ptr<LaneState>> new_state(int64_t rows) override { return inner_->new_state(rows); }
  int64_t state_bytes(int64_t positions, int64_t rows) const override {
    return inner_->state_bytes(positions, rows);
  }
  Result<LaneLogits> forward(std::span<const LaneChunk> chunks) override {
    auto logits = inner_->forward(chunks);
    if (!logits.ok()) return logits;
    int64_t row = 0;
    for (const LaneChunk& chunk : chunks) {
      const auto rows = chunk.all_logits    ? static_cast<int64_t>(chunk.tokens.size())
                        : chunk.last_logits ? 1
                                            : 0;
      for (int64_t r = 1; r < rows; ++r) logits->draws[static_cast<size_t>(row + r)] = 300;
      row += rows;
    }
    return logits;
  }

 private:
  std::unique_ptr<LaneModel> inner_;
};

TEST(DraftedEqualsSerialControl, RowCountDependentRowsAreCaught) {
  const Request request = make_request(prompt_tokens(6, 11), false);
  const Reply serial = serial_reply(request);
  std::vector<int32_t> reference = request.prompt;
  reference.insert(reference.end(), serial.tokens.begin(), serial.tokens.end());
  EngineOptions options = serial_options();
  options.drafter = std::make_shared<PlantingDrafter>(reference, 4);
  options.fixed_draft_depth = 3;
  auto engine = Engine::create(std::make_unique<RowCountLeak>(tiny_lane()), tiny_tokenizer(), options);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  auto drafted = (*engine)->generate(request);
  ASSERT_TRUE(drafted.ok()) << drafted.error().message;
  EXPECT_NE(drafted->token_sha, serial.token_sha) << "a planted I1 break went unseen";
}

}  // namespace
}  // namespace plumb::engine::testing
