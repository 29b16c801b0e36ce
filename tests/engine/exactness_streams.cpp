// E2 concurrent == solo: 1, 2, 4, 8 and 16 streams of mixed prompt lengths and stop points (max tokens, stop
// tokens, stop strings), greedy and seeded, with copy drafts on, equal their solo serial runs; the same with
// a worker thread and requests submitted from several threads. E4 graph == eager (on a backend with graphs).
// E5 rerun == run.
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "engine_fixture.hpp"

namespace plumb::engine::testing {
namespace {

constexpr size_t kPromptLengths[] = {3, 17, 140, 9, 64, 1, 33, 129, 5, 90, 12, 48, 7, 200, 26, 71};
constexpr int64_t kMaxTokens[] = {24, 6, 31, 16, 40, 12, 20, 9};

// Request i of a mix: its prompt, length limit and sampling; every third gets a stop token and every fourth a
// stop string taken from a first, unconstrained run, so replies end at varied points.
std::vector<Request> request_mix(size_t count, bool seeded) {
  std::vector<Request> requests;
  auto probe_engine = tiny_engine(serial_options());
  for (size_t i = 0; i < count; ++i) {
    Request request;
    request.prompt =
        prompt_tokens(kPromptLengths[i % std::size(kPromptLengths)], static_cast<uint32_t>(40 + i),
                      /*repetitive=*/i % 2 == 1);
    request.max_tokens = kMaxTokens[i % std::size(kMaxTokens)];
    if (seeded) {
      request.sampling.temperature = 0.7f + 0.1f * static_cast<float>(i % 4);
      request.sampling.top_p = i % 3 == 0 ? 0.9f : 1.0f;
      request.sampling.min_p = i % 5 == 0 ? 0.05f : 0.0f;
      if (i % 4 != 3) request.sampling.seed = 1000 + i;  // the rest derive theirs from the prompt
    }
    auto probe = probe_engine->generate(request);
    EXPECT_TRUE(probe.ok()) << probe.error().message;
    if (probe.ok() && i % 3 == 0 && probe->tokens.size() > 4)
      request.stop_tokens.push_back(probe->tokens[probe->tokens.size() / 2]);
    if (probe.ok() && i % 4 == 1 && !ascii_stop(probe->text).empty())
      request.stop_strings.push_back(ascii_stop(probe->text));
    requests.push_back(std::move(request));
  }
  return requests;
}

std::vector<Reply> solo_replies(const std::vector<Request>& requests) {
  std::vector<Reply> replies;
  auto engine = tiny_engine(serial_options());
  for (const Request& request : requests) {
    auto reply = engine->generate(request);
    EXPECT_TRUE(reply.ok()) << reply.error().message;
    replies.push_back(reply.ok() ? *reply : Reply{});
  }
  return replies;
}

EngineOptions concurrent_options(int streams) {
  EngineOptions options;
  options.parallel = streams;
  options.drafts = DraftMode::copies;
  options.background = false;
  return options;
}

struct Mix {
  int streams;
  bool seeded;
};

void PrintTo(const Mix& mix, std::ostream* out) {
  *out << mix.streams << (mix.seeded ? " seeded" : " greedy");
}

class ConcurrentEqualsSolo : public ::testing::TestWithParam<Mix> {};

TEST_P(ConcurrentEqualsSolo, MixedPromptsAndStops) {
  const Mix mix = GetParam();
  const std::vector<Request> requests = request_mix(static_cast<size_t>(mix.streams), mix.seeded);
  const std::vector<Reply> solo = solo_replies(requests);
  auto engine = tiny_engine(concurrent_options(mix.streams));
  const std::vector<Reply> together = run_together(*engine, requests);
  for (size_t i = 0; i < requests.size(); ++i)
    expect_same_reply(solo[i], together[i],
                      "stream " + std::to_string(i) + " of " + std::to_string(mix.streams));
  const Metrics metrics = engine->metrics();
  EXPECT_EQ(metrics.requests_finished, requests.size());
  EXPECT_EQ(metrics.kv_reserved_bytes, 0) << "reservations left after every stream ended";
  if (mix.streams > 1) {
    EXPECT_GT(metrics.round_rows, metrics.rounds) << "no round ever packed more than one row";
  }
}

INSTANTIATE_TEST_SUITE_P(Exactness, ConcurrentEqualsSolo,
                         ::testing::Values(Mix{1, false}, Mix{2, false}, Mix{4, false}, Mix{8, false},
                                           Mix{16, false}, Mix{1, true}, Mix{2, true}, Mix{4, true},
                                           Mix{8, true}, Mix{16, true}),
                         [](const auto& info) {
                           return std::to_string(info.param.streams) +
                                  (info.param.seeded ? "_streams_seeded" : "_streams_greedy");
                         });

TEST(ConcurrentEqualsSoloThreads, WorkerThreadWithSubmittersOnSeveralThreads) {
  const std::vector<Request> requests = request_mix(8, true);
  const std::vector<Reply> solo = solo_replies(requests);
  EngineOptions options = concurrent_options(4);  // fewer lanes than requests: some wait for admission
  options.background = true;
  auto engine = tiny_engine(options);
  std::vector<Reply> replies(requests.size());
  std::vector<std::string> streamed(requests.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < requests.size(); ++i) {
    clients.emplace_back([&, i] {
      auto reply = engine->generate(requests[i], [&, i](const Delta& delta) { streamed[i] += delta.text; });
      EXPECT_TRUE(reply.ok()) << reply.error().message;
      if (reply.ok()) replies[i] = *reply;
    });
  }
  for (std::thread& client : clients) client.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    expect_same_reply(solo[i], replies[i], "threaded stream " + std::to_string(i));
    EXPECT_EQ(streamed[i], replies[i].text) << "stream " << i << ": streamed text differs from the reply";
  }
}

TEST(RerunEqualsRun, FreshEnginesAndAWarmCache) {
  const std::vector<Request> requests = request_mix(6, true);
  auto first = tiny_engine(concurrent_options(6));
  const std::vector<Reply> run = run_together(*first, requests);
  auto second = tiny_engine(concurrent_options(6));
  const std::vector<Reply> rerun = run_together(*second, requests);
  // The same engine again: every prompt now resumes from the cache.
  const std::vector<Reply> warm = run_together(*second, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    expect_same_reply(run[i], rerun[i], "rerun " + std::to_string(i));
    expect_same_reply(run[i], warm[i], "warm rerun " + std::to_string(i));
  }
  EXPECT_GT(second->metrics().cache_hits, 0u) << "the warm rerun never resumed from the cache";
}

// E4: the same requests on an engine whose forwards run as recorded graphs (replayed unchanged while a
// round's launch arguments repeat) and on one that launches every op give the same tokens; the first must
// really have run and replayed graphs (on the CPU, through the recording backend).
TEST(GraphEqualsEager, MixedStreamsWithDrafts) {
  auto graph = tiny_engine_graphs(concurrent_options(8), true);
  ASSERT_NE(graph.engine, nullptr);
  auto eager = tiny_engine_graphs(concurrent_options(8), false);
  ASSERT_NE(eager.engine, nullptr);
  for (const bool seeded : {false, true}) {
    const std::vector<Request> requests = request_mix(8, seeded);
    const std::vector<Reply> graphed = run_together(*graph.engine, requests);
    const std::vector<Reply> launched = run_together(*eager.engine, requests);
    for (size_t i = 0; i < requests.size(); ++i)
      expect_same_reply(launched[i], graphed[i],
                        fmt::format("graph stream {} of 8{}", i, seeded ? " seeded" : " greedy"));
  }
  std::printf("graph engine: %lld graphs run, %lld of them replays\n",
              static_cast<long long>(graph.backend->graph_launches()),
              static_cast<long long>(graph.backend->graph_replays()));
  EXPECT_GT(graph.backend->graph_launches(), 0) << "the graph engine never ran a graph";
  EXPECT_GT(graph.backend->graph_replays(), 0)
      << "the graph engine never replayed a recorded graph unchanged";
  EXPECT_EQ(eager.backend->graph_launches(), 0) << "the eager engine ran graphs";
}

}  // namespace
}  // namespace plumb::engine::testing
