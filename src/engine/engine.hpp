#pragma once
// The lane engine (DESIGN.md §1, §2): many streams served at once by rounds. A round packs, for several live
// streams, either a prompt chunk or the pending row plus a window of drafts into one forward (at most
// `max_round_rows` rows), then each stream on its own draws keyed tokens from the target's logits, accepts
// the drafts equal to those draws, commits, checks its stops and drafts again. None of it changes a token: a
// reply is a pure function of (weights, build, backend, request), whatever the drafts, the other streams, the
// prompt cache or the run.
//
//   auto lane = make_gemma4_lane(std::move(backend), std::move(model));   // gemma4_lane.hpp
//   auto engine = Engine::create(std::move(lane), tokenizer, options);    // Result<std::unique_ptr<Engine>>
//   Request request;  request.prompt = ids;  request.max_tokens = 64;
//   Sink sink;  sink.on_delta = [](const Delta& d) { ... };  sink.on_done = [](const Reply& r) { ... };
//   Admission admission = (*engine)->submit(std::move(request), std::move(sink));
//   if (!admission.admitted()) -> admission.refusal->kind / message;   (*engine)->cancel(admission.id);
//
// Threading: with `background = true` (the default) a worker thread runs the rounds; submit, cancel, metrics
// and shutdown may be called from any thread. Sink callbacks run on the worker thread, one stream's events in
// order, never concurrently with each other; they must not block for long and must not call wait-style
// methods (generate, shutdown) - cancel is fine. With `background = false` the caller drives the rounds with
// step() / run_until_idle() (tests and benches).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "engine/drafter.hpp"
#include "engine/lane_model.hpp"
#include "engine/sampling.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::engine {

enum class DraftMode : uint8_t { none, copies };

// The KV budget when EngineOptions::kv_budget_gib is 0: 90% of the device memory free after the weights, less
// 2 GiB for activations and the prompt cache's budget, at least 256 MiB; 8 GiB where the backend does not say
// how much is free (the CPU backend: host memory).
int64_t auto_kv_budget(int64_t free_device_bytes, int64_t prompt_cache_bytes);

struct EngineOptions {
  int parallel = 8;                 // most live streams (others wait, in arrival order)
  int64_t max_round_rows = 128;     // rows in one forward, over every stream of the round
  int64_t prompt_chunk_rows = 128;  // most prompt rows one stream computes in a round (<= max_round_rows)
  DraftMode drafts = DraftMode::copies;
  std::shared_ptr<Drafter> drafter;  // overrides `drafts` when set (model drafters, test drafters)
  int max_draft_depth = 15;          // drafts per verify window (window = 1 + depth <= 16)
  int fixed_draft_depth = -1;        // >= 0: always propose this many (tests); -1: the adaptive depth rule
  double prompt_cache_gib = 1.0;     // byte budget of kept states; 0 disables the prompt cache
  double kv_budget_gib = 0;          // device bytes for live streams' states (admission); 0: auto_kv_budget
  int64_t context = 0;               // most positions per stream; 0: the model's context
  size_t max_waiting = 1024;         // requests waiting for admission beyond which submit refuses
  bool background = true;            // run rounds on a worker thread
};

struct Request {
  std::vector<int32_t> prompt;            // token ids, at least one
  SamplingOptions sampling;               // no seed: prompt_seed(prompt)
  int64_t max_tokens = 256;               // generated tokens at most (the context may end the reply sooner)
  std::vector<int32_t> stop_tokens;       // end the reply after emitting one of these (the token is kept)
  bool stop_at_eos = true;                // also stop on the model's eos tokens
  std::vector<std::string> stop_strings;  // end the reply at the token whose text completes one (needs text)
  bool draft = true;                      // false: the serial reference, one row per round
  bool use_prompt_cache = true;           // resume from, and keep into, the prompt cache
  bool skip_special_text = true;          // special tokens' text left out of `text`
  std::string label;                      // for logs only
};

enum class FinishReason : uint8_t {
  stop_token,   // a stop or eos token was emitted (it is the last token)
  stop_string,  // a stop string was completed; `text` ends before it
  length,       // max_tokens reached
  context,      // the stream reached the context limit
  cancelled,    // cancel() or shutdown without drain
  error,        // the forward failed; Reply::error says why
};
// "stop" (stop_token, stop_string), "length" (length, context), "cancelled", "error": OpenAI's words.
std::string_view openai_finish_reason(FinishReason reason);
std::string_view finish_reason_name(FinishReason reason);

struct Timings {
  double queued_seconds = 0.0;       // submit to admission
  double first_token_seconds = 0.0;  // submit to the first committed token (TTFT)
  double prompt_seconds = 0.0;       // admission to the first committed token
  double decode_seconds = 0.0;       // first committed token to the end
  double total_seconds = 0.0;        // submit to the end
};

struct Reply {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // generated ids only, the stop token included
  std::string text;             // decoded reply, cut before a stop string (empty without a tokenizer)
  std::string token_sha;        // token_sha(tokens)
  FinishReason finish = FinishReason::length;
  std::string error;  // when finish == error
  uint64_t seed = 0;  // the seed the draws used
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;    // prompt tokens resumed from the prompt cache (not computed)
  int64_t drafted_tokens = 0;   // drafts proposed for this reply
  int64_t accepted_tokens = 0;  // drafts accepted
  int64_t rounds = 0;           // rounds this stream took part in
  Timings timings;
};

// Newly committed tokens of one stream, and the text they made final. With stop strings, text that could
// still begin a stop string is held back until it cannot.
struct Delta {
  uint64_t id = 0;
  std::span<const int32_t> tokens;
  std::string_view text;
};

struct Sink {
  std::function<void(const Delta&)> on_delta;  // optional: streaming
  std::function<void(const Reply&)> on_done;   // called exactly once per admitted request
};

struct Refusal {
  enum class Kind : uint8_t {
    invalid_request,          // empty prompt, bad sampling options, ids outside the vocabulary, stop strings
                              // without a tokenizer
    context_length_exceeded,  // the prompt does not leave room for one generated token
    over_memory,              // the request's state can never fit the KV budget
    queue_full,               // too many requests waiting
    shutting_down,
  };
  Kind kind = Kind::invalid_request;
  std::string message;  // "<where>: <object> '<name>' <problem>; expected <x>, got <y>"
};
std::string_view refusal_kind_name(Refusal::Kind kind);

struct Admission {
  uint64_t id = 0;                 // valid when admitted
  std::optional<Refusal> refusal;  // set when refused; the sink is then never called
  bool admitted() const { return !refusal.has_value(); }
};

// Prometheus-style histogram: counts[i] = observations <= bounds[i] (cumulative); count includes +Inf.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  double sum = 0.0;
  uint64_t count = 0;
  void observe(double value);
};

struct Metrics {
  uint64_t requests_submitted = 0, requests_refused = 0, requests_finished = 0, requests_cancelled = 0;
  uint64_t requests_failed = 0;
  uint64_t prompt_tokens = 0;         // over finished and live requests
  uint64_t cached_prompt_tokens = 0;  // prompt tokens resumed from the prompt cache
  uint64_t prompt_rows_computed = 0;
  uint64_t generated_tokens = 0;
  uint64_t drafts_proposed = 0, drafts_accepted = 0;
  uint64_t rounds = 0, round_rows = 0;
  uint64_t cache_lookups = 0, cache_hits = 0, cache_evictions = 0;
  int64_t cache_entries = 0, cache_bytes = 0, cache_budget_bytes = 0;
  int64_t live_streams = 0, waiting_requests = 0;
  int64_t kv_reserved_bytes = 0, kv_budget_bytes = 0;
  Histogram time_to_first_token;  // seconds
  Histogram inter_token_latency;  // seconds per token (a round committing k tokens counts k times interval/k)
};

class Engine {
 public:
  // The tokenizer is needed for `text`, deltas' text and stop strings; without it replies carry ids only.
  static Result<std::unique_ptr<Engine>> create(std::unique_ptr<LaneModel> model,
                                                std::optional<text::Tokenizer> tokenizer,
                                                const EngineOptions& options);
  ~Engine();  // shutdown(false)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request, or refuses it with the reason. An admitted request waits until its state fits the KV
  // budget and a lane is free, then runs; its sink gets deltas, then on_done exactly once.
  Admission submit(Request request, Sink sink);
  // Ends a request (client disconnect): its state is freed at the next round boundary and on_done gets a
  // reply with finish cancelled. Unknown or finished ids are ignored. Returns whether the id was
  // live/waiting.
  bool cancel(uint64_t id);
  // Runs a request to its end and returns its reply (blocks). Without a worker thread it drives the rounds
  // itself, running whatever else is queued too. A refusal comes back as an error.
  Result<Reply> generate(Request request, std::function<void(const Delta&)> on_delta = {});

  // Manual driving (background = false): one admission pass and one round; false when nothing was runnable.
  Result<bool> step();
  // Steps until no request is live or waiting.
  Status run_until_idle();

  // Stops admitting; drain = true lets live and waiting requests finish, false cancels them. Idempotent.
  void shutdown(bool drain);

  Metrics metrics() const;
  const EngineOptions& options() const;
  const LaneModel& model() const;
  // The context the engine enforces (options.context or the model's).
  int64_t context() const;
  // Drops every kept state (tests).
  void clear_prompt_cache();

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parses "none" | "copies".
Result<DraftMode> parse_draft_mode(std::string_view text);

}  // namespace plumb::engine
