#pragma once
// The engine's internals, shared by engine.cpp (requests, admission, the worker) and round.cpp (rounds).
// Locking: `mutex` guards the waiting queue, cancel requests, flags and metrics; the live streams, the prompt
// cache and the cost model belong to the round thread (the worker, or the caller of step()).
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "engine/depth_rule.hpp"
#include "engine/engine.hpp"
#include "engine/prompt_cache.hpp"
#include "engine/stream.hpp"

namespace plumb::engine {

Histogram latency_histogram();
Status check_engine_options(const EngineOptions& options);

// Counters of one round, kept by the round thread and added to the metrics under the lock.
struct RoundTotals {
  uint64_t rounds = 0, rows = 0;
};

struct Engine::Impl {
  Impl(std::unique_ptr<LaneModel> lane, std::optional<text::Tokenizer> tok, const EngineOptions& opts);

  std::unique_ptr<LaneModel> model;
  std::optional<text::Tokenizer> tokenizer;
  EngineOptions options;
  int64_t context = 0;
  int64_t kv_budget_bytes = 0;
  std::shared_ptr<Drafter> drafter;  // null: no drafts

  // Round thread only.
  std::vector<std::unique_ptr<Stream>> live;
  PromptCache cache;
  RoundCost cost;
  size_t round_start = 0;    // rotates which stream is planned first when rows run out
  RoundTotals round_totals;  // this round's, added to the metrics on delivery

  // Guarded by mutex.
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::unique_ptr<Stream>> waiting;
  std::unordered_set<uint64_t> cancels;
  uint64_t next_id = 1;
  int64_t kv_reserved = 0;
  bool stopping = false;
  bool cancel_all = false;
  bool clear_cache_requested = false;
  std::unordered_set<uint64_t> active_ids;  // waiting or live
  Metrics metrics;
  std::thread worker;

  // engine.cpp
  std::optional<Refusal> check(const Request& request) const;
  int64_t reservation(const Request& request) const;
  std::unique_ptr<Stream> make_stream(Request request, Sink sink);
  Result<bool> step();
  void run_worker();
  // Moves admissible waiting requests to `admitted`, and cancelled ones to `dropped` (under the lock).
  void admit(std::vector<std::unique_ptr<Stream>>& admitted, std::vector<std::unique_ptr<Stream>>& dropped);
  Status start(Stream& stream);
  // Delivers a round's deltas, finishes ended streams (keeping states, releasing reservations, on_done).
  void deliver(std::vector<std::unique_ptr<Stream>>& ended);
  void retire(Stream& stream);

  // round.cpp
  // Plans windows for the live streams, runs one forward, then draws, verifies and commits per stream.
  Status run_round();
  void plan_round(std::vector<Stream*>& planned);
  Status verify(Stream& stream, const LaneLogits& logits, int64_t first_logit, Clock::time_point now);
  void propose_drafts(Stream& stream, int64_t streams, int64_t room);
};

}  // namespace plumb::engine
