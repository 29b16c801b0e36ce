// Requests, admission by memory, the worker thread and the delivery of replies; the rounds are in round.cpp.
#include <algorithm>
#include <future>

#include <fmt/format.h>

#include "engine/engine_impl.hpp"

namespace plumb::engine {

namespace {

constexpr std::string_view kWhere = "engine";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Refusal refusal(Refusal::Kind kind, Error error) {
  return Refusal{kind, std::move(error.message)};
}

}  // namespace

Status check_engine_options(const EngineOptions& options) {
  auto out_of_range = [](std::string_view name, std::string_view expected, auto got) {
    return error_at(kWhere, "option", name, "is out of range", expected, fmt::format("{}", got));
  };
  if (options.parallel < 1) return out_of_range("parallel", ">= 1", options.parallel);
  if (options.max_round_rows < 1) return out_of_range("max_round_rows", ">= 1", options.max_round_rows);
  if (options.prompt_chunk_rows < 1 || options.prompt_chunk_rows > options.max_round_rows)
    return out_of_range("prompt_chunk_rows", "1 .. max_round_rows", options.prompt_chunk_rows);
  if (options.max_draft_depth < 0 || options.max_draft_depth >= options.max_round_rows)
    return out_of_range("max_draft_depth", "0 .. max_round_rows - 1", options.max_draft_depth);
  if (!(options.prompt_cache_gib >= 0.0))
    return out_of_range("prompt_cache_gib", ">= 0", options.prompt_cache_gib);
  if (!(options.kv_budget_gib >= 0.0))
    return out_of_range("kv_budget_gib", ">= 0 (0: auto)", options.kv_budget_gib);
  if (options.context < 0) return out_of_range("context", ">= 0", options.context);
  return {};
}

int64_t auto_kv_budget(int64_t free_device_bytes, int64_t prompt_cache_bytes) {
  if (free_device_bytes < 0) return static_cast<int64_t>(8 * kGiB);
  const double budget =
      0.9 * static_cast<double>(free_device_bytes) - 2 * kGiB - static_cast<double>(prompt_cache_bytes);
  return static_cast<int64_t>(std::max(budget, 0.25 * kGiB));
}

Engine::Impl::Impl(std::unique_ptr<LaneModel> lane, std::optional<text::Tokenizer> tok,
                   const EngineOptions& opts)
    : model(std::move(lane)),
      tokenizer(std::move(tok)),
      options(opts),
      cache(static_cast<int64_t>(opts.prompt_cache_gib * kGiB)) {
  const int64_t model_context = model->context() > 0 ? model->context() : INT32_MAX;
  context = options.context > 0 ? std::min(options.context, model_context) : model_context;
  kv_budget_bytes = options.kv_budget_gib > 0
                        ? static_cast<int64_t>(options.kv_budget_gib * kGiB)
                        : auto_kv_budget(model->free_device_bytes(), cache.budget_bytes());
  drafter = options.drafter;
  if (!drafter && options.drafts == DraftMode::copies) drafter = std::make_shared<CopyDrafter>();
  metrics.time_to_first_token = latency_histogram();
  metrics.inter_token_latency = latency_histogram();
  metrics.kv_budget_bytes = kv_budget_bytes;
  metrics.cache_budget_bytes = cache.budget_bytes();
}

int64_t Engine::Impl::reservation(const Request& request) const {
  const auto prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t reply = std::min(request.max_tokens, context);  // a huge max_tokens must not overflow
  const int64_t positions = std::min(prompt + reply + options.max_draft_depth + 1, context);
  int64_t bytes = model->state_bytes(positions, options.max_round_rows);
  if (request.use_prompt_cache && cache.budget_bytes() > 0 && !model->path_invariant())
    bytes += model->state_bytes(prompt, options.max_round_rows);  // the snapshot at the prompt's end
  return bytes;
}

std::optional<Refusal> Engine::Impl::check(const Request& request) const {
  using Kind = Refusal::Kind;
  const auto prompt = static_cast<int64_t>(request.prompt.size());
  if (prompt == 0)
    return refusal(Kind::invalid_request,
                   error_at(kWhere, "request", "prompt", "is empty", ">= 1 token", "0"));
  for (size_t i = 0; i < request.prompt.size(); ++i)
    if (request.prompt[i] < 0 || request.prompt[i] >= model->vocab())
      return refusal(
          Kind::invalid_request,
          error_at(kWhere, "prompt token at index", std::to_string(i), "is outside the vocabulary",
                   fmt::format("0 <= id < {}", model->vocab()), std::to_string(request.prompt[i])));
  if (const Status valid = validate(request.sampling); !valid.ok())
    return refusal(Kind::invalid_request, valid.error());
  if (request.max_tokens < 1)
    return refusal(Kind::invalid_request, error_at(kWhere, "request", "max_tokens", "is out of range", ">= 1",
                                                   std::to_string(request.max_tokens)));
  if (!request.stop_strings.empty() && !tokenizer)
    return refusal(Kind::invalid_request, error_at(kWhere, "request", "stop", "needs a tokenizer",
                                                   "an engine with a tokenizer", "none"));
  if (prompt >= context)
    return refusal(Kind::context_length_exceeded,
                   error_at(kWhere, "request", "prompt", "leaves no room in the context",
                            fmt::format("at most {} prompt tokens (context {})", context - 1, context),
                            std::to_string(prompt)));
  if (const int64_t bytes = reservation(request); bytes > kv_budget_bytes)
    return refusal(Kind::over_memory, error_at(kWhere, "request", "state", "does not fit the KV budget",
                                               fmt::format("at most {} bytes", kv_budget_bytes),
                                               fmt::format("{} bytes", bytes)));
  return std::nullopt;
}

std::unique_ptr<Stream> Engine::Impl::make_stream(Request request, Sink sink) {
  auto stream = std::make_unique<Stream>();
  stream->seed = request.sampling.seed.value_or(prompt_seed(request.prompt));
  stream->stop_tokens = request.stop_tokens;
  if (request.stop_at_eos)
    for (int32_t eos : model->eos_tokens()) stream->stop_tokens.push_back(eos);
  stream->tokens = request.prompt;
  stream->prompt_length = static_cast<int64_t>(request.prompt.size());
  stream->context = context;
  stream->needed_bytes = reservation(request);
  stream->reply.seed = stream->seed;
  stream->reply.prompt_tokens = stream->prompt_length;
  stream->request = std::move(request);
  stream->sink = std::move(sink);
  stream->submitted = Clock::now();
  return stream;
}

Status Engine::Impl::start(Stream& stream) {
  stream.admitted = Clock::now();
  const Request& request = stream.request;
  if (tokenizer) stream.text = StopText(*tokenizer, request.skip_special_text, request.stop_strings);
  if (drafter && request.draft) stream.drafter = drafter->open(request.prompt);
  if (request.use_prompt_cache && cache.budget_bytes() > 0) {
    auto hit = cache.resume(request.prompt);
    if (!hit.ok()) return hit.error();
    std::lock_guard lock(mutex);
    ++metrics.cache_lookups;
    metrics.prompt_tokens += static_cast<uint64_t>(stream.prompt_length);
    if (hit->has_value()) {
      ++metrics.cache_hits;
      stream.state = std::move((*hit)->state);
      stream.reply.cached_tokens = (*hit)->resumed;
      metrics.cached_prompt_tokens += static_cast<uint64_t>((*hit)->resumed);
    }
  } else {
    std::lock_guard lock(mutex);
    metrics.prompt_tokens += static_cast<uint64_t>(stream.prompt_length);
  }
  if (!stream.state) {
    auto state = model->new_state(options.max_round_rows);
    if (!state.ok()) return state.error();
    stream.state = std::move(*state);
  }
  return {};
}

void Engine::Impl::admit(std::vector<std::unique_ptr<Stream>>& admitted,
                         std::vector<std::unique_ptr<Stream>>& dropped) {
  std::lock_guard lock(mutex);
  if (clear_cache_requested) {
    cache.clear();
    clear_cache_requested = false;
  }
  for (auto it = waiting.begin(); it != waiting.end();) {
    if (cancel_all || cancels.contains((*it)->id)) {
      dropped.push_back(std::move(*it));
      it = waiting.erase(it);
    } else {
      ++it;
    }
  }
  // Arrival order: the first request that does not fit waits, and so do the ones behind it.
  while (!waiting.empty() && live.size() + admitted.size() < static_cast<size_t>(options.parallel) &&
         kv_reserved + waiting.front()->needed_bytes <= kv_budget_bytes) {
    kv_reserved += waiting.front()->needed_bytes;
    waiting.front()->reserved = true;
    admitted.push_back(std::move(waiting.front()));
    waiting.pop_front();
  }
  for (auto& stream : live)
    if (cancel_all || cancels.contains(stream->id)) stream->cancel_requested = true;
}

Result<bool> Engine::Impl::step() {
  std::vector<std::unique_ptr<Stream>> admitted, ended;
  admit(admitted, ended);
  for (auto& stream : ended) (void)stream->finish(FinishReason::cancelled);
  for (auto& stream : admitted) {
    const Status started = start(*stream);
    if (!started.ok()) stream->reply.error = started.error().message;
    live.push_back(std::move(stream));
    if (!started.ok()) (void)live.back()->finish(FinishReason::error);
  }
  for (auto& stream : live)
    if (stream->cancel_requested && !stream->finished) (void)stream->finish(FinishReason::cancelled);
  const bool runnable = std::any_of(live.begin(), live.end(), [](const auto& s) { return !s->finished; });
  // A failed round has ended its streams with the error in their replies.
  if (runnable) (void)run_round();
  for (auto it = live.begin(); it != live.end();) {
    if ((*it)->finished) {
      ended.push_back(std::move(*it));
      it = live.erase(it);
    } else {
      ++it;
    }
  }
  deliver(ended);
  return runnable || !ended.empty();
}

void Engine::Impl::retire(Stream& stream) {
  const Clock::time_point now = Clock::now();
  Reply& reply = stream.reply;
  reply.id = stream.id;
  reply.token_sha = token_sha(reply.tokens);
  Timings& timings = reply.timings;
  const bool started = stream.reserved && stream.admitted != Clock::time_point{};
  timings.queued_seconds = started ? seconds_between(stream.submitted, stream.admitted) : 0.0;
  if (!reply.tokens.empty()) {
    timings.first_token_seconds = seconds_between(stream.submitted, stream.first_token);
    timings.prompt_seconds = seconds_between(stream.admitted, stream.first_token);
    timings.decode_seconds = seconds_between(stream.first_token, now);
  }
  timings.total_seconds = seconds_between(stream.submitted, now);
  const bool natural_end = reply.finish != FinishReason::cancelled && reply.finish != FinishReason::error;
  if (natural_end && stream.request.use_prompt_cache && cache.budget_bytes() > 0) {
    if (model->path_invariant() && stream.state) {
      const int64_t end = stream.state->end();
      cache.keep(std::vector<int32_t>(stream.tokens.begin(), stream.tokens.begin() + end),
                 std::move(stream.state));
    } else if (stream.prompt_snapshot) {
      cache.keep(stream.request.prompt, std::move(stream.prompt_snapshot));
    }
  }
  stream.state.reset();
  stream.prompt_snapshot.reset();
  stream.drafter.reset();
  std::lock_guard lock(mutex);
  if (stream.reserved) kv_reserved -= stream.needed_bytes;
  active_ids.erase(stream.id);
  cancels.erase(stream.id);
  ++(reply.finish == FinishReason::cancelled ? metrics.requests_cancelled
     : reply.finish == FinishReason::error   ? metrics.requests_failed
                                             : metrics.requests_finished);
}

void Engine::Impl::deliver(std::vector<std::unique_ptr<Stream>>& ended) {
  std::vector<Stream*> touched;
  for (auto& stream : live) touched.push_back(stream.get());
  for (auto& stream : ended) touched.push_back(stream.get());
  for (auto& stream : ended) retire(*stream);
  {
    std::lock_guard lock(mutex);
    for (Stream* stream : touched) {
      const auto committed = static_cast<int64_t>(stream->delta_tokens.size());
      metrics.generated_tokens += static_cast<uint64_t>(committed);
      if (committed > 0 && static_cast<int64_t>(stream->reply.tokens.size()) == committed)
        metrics.time_to_first_token.observe(seconds_between(stream->submitted, stream->first_token));
      if (stream->token_interval > 0.0)
        for (int64_t i = 0; i < committed; ++i) metrics.inter_token_latency.observe(stream->token_interval);
      metrics.drafts_proposed += static_cast<uint64_t>(stream->round_drafted);
      metrics.drafts_accepted += static_cast<uint64_t>(stream->round_accepted);
      metrics.prompt_rows_computed += static_cast<uint64_t>(stream->round_prompt_rows);
    }
    metrics.rounds += round_totals.rounds;
    metrics.round_rows += round_totals.rows;
    round_totals = {};
    metrics.live_streams = static_cast<int64_t>(live.size());
    metrics.cache_entries = cache.entries();
    metrics.cache_bytes = cache.bytes();
    metrics.cache_evictions = cache.evictions();
  }
  for (Stream* stream : touched) {
    if (stream->sink.on_delta && (!stream->delta_tokens.empty() || !stream->delta_text.empty()))
      stream->sink.on_delta(Delta{stream->id, stream->delta_tokens, stream->delta_text});
    stream->delta_tokens.clear();
    stream->delta_text.clear();
    stream->token_interval = 0.0;
    stream->round_drafted = stream->round_accepted = stream->round_prompt_rows = 0;
  }
  for (auto& stream : ended)
    if (stream->sink.on_done) stream->sink.on_done(stream->reply);
}

void Engine::Impl::run_worker() {
  while (true) {
    {
      std::unique_lock lock(mutex);
      wake.wait(lock, [&] { return stopping || !waiting.empty() || !live.empty(); });
      if (stopping && waiting.empty() && live.empty()) return;
    }
    // A failed round has already ended its streams with the error; the worker carries on.
    (void)step();
  }
}

}  // namespace plumb::engine
