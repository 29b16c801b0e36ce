// Requests through the engine: refusals with their reasons, cancellation freeing memory, streamed deltas,
// stop strings and the context limit, metrics, and draining on shutdown.
#include <gtest/gtest.h>

#include "engine_fixture.hpp"

namespace plumb::engine {
namespace {

using testing::prompt_tokens;
using testing::serial_options;
using testing::tiny_engine;

Request simple_request(size_t prompt_length, int64_t max_tokens, uint32_t seed = 3) {
  Request request;
  request.prompt = prompt_tokens(prompt_length, seed);
  request.max_tokens = max_tokens;
  request.stop_at_eos = false;
  return request;
}

Refusal::Kind refused_kind(Engine& engine, Request request) {
  const Admission admission = engine.submit(std::move(request), Sink{});
  EXPECT_FALSE(admission.admitted()) << "expected a refusal";
  if (admission.admitted()) return Refusal::Kind::invalid_request;
  EXPECT_FALSE(admission.refusal->message.empty());
  return admission.refusal->kind;
}

TEST(EngineRequests, RefusalsNameTheirReason) {
  EngineOptions options = serial_options();
  options.context = 64;
  options.max_waiting = 1;
  auto engine = tiny_engine(options);
  EXPECT_EQ(refused_kind(*engine, Request{}), Refusal::Kind::invalid_request);
  Request outside = simple_request(4, 4);
  outside.prompt[2] = 100000;
  EXPECT_EQ(refused_kind(*engine, outside), Refusal::Kind::invalid_request);
  Request hot = simple_request(4, 4);
  hot.sampling.temperature = -1.0f;
  EXPECT_EQ(refused_kind(*engine, hot), Refusal::Kind::invalid_request);
  EXPECT_EQ(refused_kind(*engine, simple_request(64, 4)), Refusal::Kind::context_length_exceeded);
  const Admission long_prompt = engine->submit(simple_request(64, 4), Sink{});
  EXPECT_NE(long_prompt.refusal->message.find("at most 63 prompt tokens"), std::string::npos)
      << long_prompt.refusal->message;
  ASSERT_TRUE(engine->submit(simple_request(4, 4), Sink{}).admitted());
  EXPECT_EQ(refused_kind(*engine, simple_request(4, 4)), Refusal::Kind::queue_full);
  engine->shutdown(true);
  EXPECT_EQ(refused_kind(*engine, simple_request(4, 4)), Refusal::Kind::shutting_down);
  EXPECT_EQ(engine->metrics().requests_refused, 7u);
}

TEST(EngineRequests, OverMemoryAndStopStringsWithoutATokenizer) {
  EngineOptions options = serial_options();
  options.kv_budget_gib = 1.0 / 1024 / 1024;  // 1 KiB: no state fits
  auto small = tiny_engine(options);
  EXPECT_EQ(refused_kind(*small, simple_request(4, 4)), Refusal::Kind::over_memory);
  auto bare = Engine::create(testing::tiny_lane(), std::nullopt, serial_options());
  ASSERT_TRUE(bare.ok());
  Request request = simple_request(4, 4);
  request.stop_strings = {"x"};
  EXPECT_EQ(refused_kind(**bare, request), Refusal::Kind::invalid_request);
  auto ids_only = (*bare)->generate(simple_request(4, 4));
  ASSERT_TRUE(ids_only.ok()) << ids_only.error().message;
  EXPECT_EQ(ids_only->tokens.size(), 4u);
  EXPECT_TRUE(ids_only->text.empty());
}

TEST(EngineRequests, AnUnsetKvBudgetFollowsTheFreeDeviceMemory) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  // 90% of what is free, less 2 GiB and the prompt cache; never below 256 MiB; 8 GiB when nothing is known.
  EXPECT_EQ(auto_kv_budget(100 * kGiB, kGiB), 90 * kGiB - 3 * kGiB);
  EXPECT_EQ(auto_kv_budget(2 * kGiB, 0), kGiB / 4);
  EXPECT_EQ(auto_kv_budget(-1, kGiB), 8 * kGiB);
  EngineOptions options = serial_options();
  options.kv_budget_gib = 0;
  options.prompt_cache_gib = 0;
  auto engine = tiny_engine(options);  // the CPU backend does not report free memory
  EXPECT_EQ(engine->metrics().kv_budget_bytes, 8 * kGiB);
  options.kv_budget_gib = -1;
  EXPECT_FALSE(Engine::create(testing::tiny_lane(), std::nullopt, options).ok());
}

TEST(EngineRequests, CancelFreesTheStreamAndItsReservation) {
  EngineOptions options = serial_options();
  options.parallel = 1;
  auto engine = tiny_engine(options);
  std::vector<Reply> replies(2);
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < 2; ++i) {
    Sink sink;
    sink.on_done = [&replies, i](const Reply& reply) { replies[i] = reply; };
    const Admission admission =
        engine->submit(simple_request(20, 50, static_cast<uint32_t>(i)), std::move(sink));
    ASSERT_TRUE(admission.admitted());
    ids.push_back(admission.id);
  }
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(engine->step().ok());
  EXPECT_GT(engine->metrics().kv_reserved_bytes, 0);
  EXPECT_TRUE(engine->cancel(ids[0]));  // live
  EXPECT_TRUE(engine->cancel(ids[1]));  // still waiting: parallel is 1
  ASSERT_TRUE(engine->run_until_idle().ok());
  EXPECT_EQ(replies[0].finish, FinishReason::cancelled);
  EXPECT_LT(replies[0].tokens.size(), 50u);
  EXPECT_EQ(replies[1].finish, FinishReason::cancelled);
  EXPECT_TRUE(replies[1].tokens.empty());
  EXPECT_FALSE(engine->cancel(ids[0])) << "a finished id is no longer cancellable";
  const Metrics metrics = engine->metrics();
  EXPECT_EQ(metrics.requests_cancelled, 2u);
  EXPECT_EQ(metrics.kv_reserved_bytes, 0);
  EXPECT_EQ(metrics.live_streams, 0);
}

TEST(EngineRequests, DeltasAddUpToTheReply) {
  EngineOptions options = serial_options();
  options.drafts = DraftMode::copies;
  options.fixed_draft_depth = 5;
  auto engine = tiny_engine(options);
  Request request = simple_request(12, 30);
  request.prompt = prompt_tokens(12, 4, /*repetitive=*/true);
  std::vector<int32_t> tokens;
  std::string text;
  auto reply = engine->generate(request, [&](const Delta& delta) {
    tokens.insert(tokens.end(), delta.tokens.begin(), delta.tokens.end());
    text += delta.text;
  });
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(tokens, reply->tokens);
  EXPECT_EQ(text, reply->text);
  EXPECT_EQ(reply->token_sha, token_sha(reply->tokens));
  EXPECT_EQ(reply->finish, FinishReason::length);
  EXPECT_EQ(reply->prompt_tokens, 12);
}

TEST(EngineRequests, StopStringsEndAtTheSameTokenDraftedOrNot) {
  auto serial = tiny_engine(serial_options());
  Request request = simple_request(10, 40);
  request.prompt = prompt_tokens(10, 2);
  auto probe = serial->generate(request);
  ASSERT_TRUE(probe.ok());
  const std::string stop = testing::ascii_stop(probe->text);
  ASSERT_FALSE(stop.empty()) << probe->text;
  request.stop_strings = {stop};
  auto stopped = serial->generate(request);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->finish, FinishReason::stop_string);
  EXPECT_EQ(stopped->text.find(request.stop_strings[0]), std::string::npos) << stopped->text;
  EXPECT_LT(stopped->tokens.size(), probe->tokens.size());
  for (int depth : {1, 3, 7, 15}) {
    EngineOptions options = serial_options();
    options.drafts = DraftMode::copies;
    options.fixed_draft_depth = depth;
    auto drafted = tiny_engine(options)->generate(request);
    ASSERT_TRUE(drafted.ok());
    testing::expect_same_reply(*stopped, *drafted, "stop string, depth " + std::to_string(depth));
  }
}

TEST(EngineRequests, TheContextEndsAReply) {
  EngineOptions options = serial_options();
  options.context = 40;
  auto engine = tiny_engine(options);
  auto reply = engine->generate(simple_request(30, INT64_MAX));
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->finish, FinishReason::context);
  EXPECT_EQ(reply->tokens.size(), 10u);
  EXPECT_EQ(openai_finish_reason(reply->finish), "length");
}

TEST(EngineRequests, MetricsCountTokensLatencyAndDrafts) {
  EngineOptions options = serial_options();
  options.parallel = 3;
  options.drafter = std::make_shared<CopyDrafter>(/*min_match=*/1);  // proposes whenever the token occurred
  options.fixed_draft_depth = 3;
  auto engine = tiny_engine(options);
  std::vector<Request> requests;
  for (uint32_t i = 0; i < 3; ++i) {
    requests.push_back(simple_request(16, 12, i));
    requests.back().prompt = prompt_tokens(16, i, /*repetitive=*/true);
  }
  const std::vector<Reply> replies = testing::run_together(*engine, requests);
  const Metrics metrics = engine->metrics();
  uint64_t generated = 0, drafted = 0, accepted = 0;
  for (const Reply& reply : replies) {
    generated += reply.tokens.size();
    drafted += static_cast<uint64_t>(reply.drafted_tokens);
    accepted += static_cast<uint64_t>(reply.accepted_tokens);
  }
  EXPECT_EQ(metrics.requests_finished, 3u);
  EXPECT_EQ(metrics.generated_tokens, generated);
  EXPECT_EQ(metrics.prompt_tokens, 48u);
  EXPECT_EQ(metrics.drafts_proposed, drafted);
  EXPECT_EQ(metrics.drafts_accepted, accepted);
  EXPECT_GT(drafted, 0u);
  EXPECT_EQ(metrics.time_to_first_token.count, 3u);
  EXPECT_EQ(metrics.inter_token_latency.count, generated - 3);
  EXPECT_EQ(metrics.time_to_first_token.counts.back(), metrics.time_to_first_token.count)
      << "every first token within the last bucket";
}

TEST(EngineRequests, ShutdownDrainsABackgroundEngine) {
  EngineOptions options;
  options.parallel = 2;
  auto engine = tiny_engine(options);
  std::vector<Reply> replies(4);
  for (size_t i = 0; i < 4; ++i) {
    Sink sink;
    sink.on_done = [&replies, i](const Reply& reply) { replies[i] = reply; };
    ASSERT_TRUE(engine->submit(simple_request(8, 6, static_cast<uint32_t>(i)), std::move(sink)).admitted());
  }
  engine->shutdown(true);
  for (const Reply& reply : replies) {
    EXPECT_EQ(reply.finish, FinishReason::length);
    EXPECT_EQ(reply.tokens.size(), 6u);
  }
}

}  // namespace
}  // namespace plumb::engine
