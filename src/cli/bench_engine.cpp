#include "cli/bench_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "cli/bench_model.hpp"
#include "engine/gemma4_lane.hpp"
#include "engine/sampling.hpp"

namespace plumb::cli {

namespace {

constexpr int64_t kBlock = 16;  // ids in the repeated prompt's block
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Two prompt kinds: "varied" is bench_prompt (the decode section's ids, no id repeats within 128 tokens for
// a real vocabulary), where copy drafts find little to copy from the prompt; "repeated" is repeated_prompt,
// where the prompt itself is all repeats.
enum class PromptKind { varied, repeated };
constexpr PromptKind kKinds[] = {PromptKind::varied, PromptKind::repeated};

const char* kind_name(PromptKind kind) {
  return kind == PromptKind::varied ? "varied" : "repeated";
}

std::vector<int32_t> kind_prompt(PromptKind kind, int64_t stream, int64_t length, int64_t vocab) {
  return kind == PromptKind::varied ? bench_prompt(stream, length, vocab)
                                    : repeated_prompt(stream, length, vocab);
}

// What one run (a stream count, a prompt kind, drafts off or on) measured; counts are the engine's metrics
// over the run.
struct EngineRun {
  std::vector<engine::Reply> replies;  // by stream
  double wall_seconds = 0;             // first submit to the last reply, prompts included
  uint64_t generated = 0, rounds = 0, round_rows = 0, proposed = 0, accepted = 0;
};

// The engine's options: every stream of the largest count admitted at once, no prompt cache (a run must
// compute its prompts, not resume the previous run's), rounds driven on this thread.
engine::EngineOptions bench_engine_options(const engine::LaneModel& lane, const EngineBenchOptions& options) {
  engine::EngineOptions engine_options;
  const int64_t most = *std::max_element(options.streams.begin(), options.streams.end());
  engine_options.parallel = static_cast<int>(most);
  engine_options.drafts = engine::DraftMode::copies;
  engine_options.prompt_cache_gib = 0.0;
  engine_options.background = false;
  const int64_t context = lane.context() > 0 ? lane.context() : INT32_MAX;
  const int64_t positions =
      std::min(options.prompt + options.tokens + engine_options.max_draft_depth + 1, context);
  const double per_stream = static_cast<double>(lane.state_bytes(positions, engine_options.max_round_rows));
  // The engine reserves exactly state_bytes per stream; the slack covers the GiB conversion's rounding.
  engine_options.kv_budget_gib = static_cast<double>(most) * per_stream / kGiB * 1.001 + 1.0 / 1024;
  return engine_options;
}

Result<EngineRun> run_streams(engine::Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                              int64_t tokens, bool drafts) {
  EngineRun run;
  std::vector<std::optional<engine::Reply>> done(prompts.size());
  const engine::Metrics before = engine.metrics();
  const auto start = std::chrono::steady_clock::now();
  for (size_t s = 0; s < prompts.size(); ++s) {
    engine::Request request;
    request.prompt = prompts[s];
    request.max_tokens = tokens;
    request.stop_at_eos = false;  // every stream generates `tokens` tokens, whatever the random weights say
    request.draft = drafts;
    request.use_prompt_cache = false;
    request.label = fmt::format("bench stream {}", s);
    engine::Sink sink;
    sink.on_done = [&done, s](const engine::Reply& reply) { done[s] = reply; };
    const engine::Admission admission = engine.submit(std::move(request), std::move(sink));
    if (!admission.admitted()) return Error{admission.refusal->message};
  }
  PLUMB_TRY(engine.run_until_idle());
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const engine::Metrics after = engine.metrics();
  run.generated = after.generated_tokens - before.generated_tokens;
  run.rounds = after.rounds - before.rounds;
  run.round_rows = after.round_rows - before.round_rows;
  run.proposed = after.drafts_proposed - before.drafts_proposed;
  run.accepted = after.drafts_accepted - before.drafts_accepted;
  for (size_t s = 0; s < done.size(); ++s) {
    if (!done[s]) return error_at("bench.engine", "stream", std::to_string(s), "got no reply", "one", "none");
    run.replies.push_back(std::move(*done[s]));
  }
  return run;
}

// Empty when equal; otherwise the first differing index with both ids (-1: past the end).
std::string token_difference(const std::vector<int32_t>& expected, const std::vector<int32_t>& got) {
  if (expected == got) return {};
  size_t i = 0;
  while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
  auto at = [i](const std::vector<int32_t>& ids) { return i < ids.size() ? ids[i] : -1; };
  return fmt::format("first difference at token {}: expected {}, got {}", i, at(expected), at(got));
}

struct Section {
  const EngineBenchOptions& options;
  engine::Engine& engine;
  int64_t vocab = 0;
  EngineBench& out;
  // Per prompt kind, each stream's drafts-off tokens from the first count that ran it, and that count.
  std::vector<std::vector<int32_t>> reference[2];
  std::vector<int64_t> reference_streams[2];
};

void check_replies(Section& section, int64_t streams, PromptKind kind, bool drafts, const EngineRun& run,
                   const EngineRun* off) {
  const std::string what = fmt::format("engine {} streams, {} prompts, drafts {}", streams, kind_name(kind),
                                       drafts ? "on" : "off");
  auto& reference = section.reference[static_cast<int>(kind)];
  auto& reference_streams = section.reference_streams[static_cast<int>(kind)];
  for (size_t s = 0; s < run.replies.size(); ++s) {
    const engine::Reply& reply = run.replies[s];
    std::vector<std::string> problems;
    if (reply.finish == engine::FinishReason::error) problems.push_back("the forward failed: " + reply.error);
    if (static_cast<int64_t>(reply.tokens.size()) != section.options.tokens)
      problems.push_back(fmt::format("ended after {} tokens ({}); expected {}", reply.tokens.size(),
                                     engine::finish_reason_name(reply.finish), section.options.tokens));
    if (off != nullptr)
      if (std::string d = token_difference(off->replies[s].tokens, reply.tokens); !d.empty())
        problems.push_back("drafts on differ from drafts off, " + d);
    if (off == nullptr && s < reference.size())
      if (std::string d = token_difference(reference[s], reply.tokens); !d.empty())
        problems.push_back(fmt::format("differs from the {}-stream run, {}", reference_streams[s], d));
    if (off == nullptr && s >= reference.size()) {
      reference.push_back(reply.tokens);
      reference_streams.push_back(streams);
    }
    for (const std::string& problem : problems)
      section.out.failed_checks.push_back(fmt::format("{}: stream {} {}", what, s, problem));
  }
}

void report(Section& section, int64_t streams, PromptKind kind, bool drafts, const EngineRun& run) {
  const double tokens_per_second = static_cast<double>(run.generated) / run.wall_seconds;
  const std::string acceptance = run.proposed > 0
                                     ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(run.accepted) /
                                                                  static_cast<double>(run.proposed))
                                     : std::string("n/a");
  std::printf(
      "engine %3lld streams, %-8s prompts, drafts %-3s: %9.1f tokens/s (%llu tokens in %.3f s, prompts "
      "included; %llu rounds, %llu rows); drafts %llu proposed, %llu accepted, acceptance %s; stream 0 "
      "token_sha %.12s\n",
      static_cast<long long>(streams), kind_name(kind), drafts ? "on" : "off", tokens_per_second,
      static_cast<unsigned long long>(run.generated), run.wall_seconds,
      static_cast<unsigned long long>(run.rounds), static_cast<unsigned long long>(run.round_rows),
      static_cast<unsigned long long>(run.proposed), static_cast<unsigned long long>(run.accepted),
      acceptance.c_str(), run.replies.front().token_sha.c_str());
  std::fflush(stdout);
  std::vector<std::string> shas;
  for (const engine::Reply& reply : run.replies) shas.push_back(reply.token_sha);
  nlohmann::json acceptance_value =
      run.proposed > 0 ? nlohmann::json(static_cast<double>(run.accepted) / static_cast<double>(run.proposed))
                       : nlohmann::json(nullptr);
  section.out.record["runs"].push_back({{"streams", streams},
                                        {"prompt", kind_name(kind)},
                                        {"drafts", drafts ? "copies" : "none"},
                                        {"tokens_per_second", tokens_per_second},
                                        {"wall_seconds", run.wall_seconds},
                                        {"generated_tokens", run.generated},
                                        {"rounds", run.rounds},
                                        {"round_rows", run.round_rows},
                                        {"drafts_proposed", run.proposed},
                                        {"drafts_accepted", run.accepted},
                                        {"acceptance", acceptance_value},
                                        {"token_shas", shas}});
}

void run_count(Section& section, int64_t streams) {
  for (PromptKind kind : kKinds) {
    std::vector<std::vector<int32_t>> prompts;
    for (int64_t s = 0; s < streams; ++s)
      prompts.push_back(kind_prompt(kind, s, section.options.prompt, section.vocab));
    std::optional<EngineRun> off;
    for (bool drafts : {false, true}) {
      auto run = run_streams(section.engine, prompts, section.options.tokens, drafts);
      if (!run) {
        section.out.failed_checks.push_back(fmt::format("engine {} streams, {} prompts, drafts {}: {}",
                                                        streams, kind_name(kind), drafts ? "on" : "off",
                                                        run.error().message));
        break;
      }
      check_replies(section, streams, kind, drafts, *run, off ? &*off : nullptr);
      report(section, streams, kind, drafts, *run);
      if (!drafts) off = std::move(*run);
    }
  }
}

}  // namespace

std::vector<int32_t> repeated_prompt(int64_t stream, int64_t length, int64_t vocab) {
  const std::vector<int32_t> block = bench_prompt(stream, kBlock + 1, vocab);
  std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(length, 0)));
  for (int64_t i = 0; i < length; ++i)
    ids[static_cast<size_t>(i)] = i == 0 ? block[0] : block[static_cast<size_t>(1 + (i - 1) % kBlock)];
  return ids;
}

EngineBench run_engine_bench(LoadedGemma4 loaded, const EngineBenchOptions& options) {
  EngineBench out;
  const int64_t vocab = loaded.model.config.vocab;
  auto lane = engine::make_gemma4_lane(std::move(loaded.backend), std::move(loaded.model));
  const engine::EngineOptions engine_options = bench_engine_options(*lane, options);
  auto made = engine::Engine::create(std::move(lane), std::nullopt, engine_options);
  if (!made) {
    out.failed_checks.push_back("engine: " + made.error().message);
    return out;
  }
  out.engine = std::move(*made);
  out.record = {{"prompt_tokens", options.prompt},
                {"tokens_per_stream", options.tokens},
                {"max_round_rows", engine_options.max_round_rows},
                {"max_draft_depth", engine_options.max_draft_depth},
                {"kv_budget_bytes", out.engine->metrics().kv_budget_bytes},
                {"prompts",
                 {{"varied", "bench_prompt: <bos>, then 3 + (i * 7919 + s * 104729) mod (vocab - 3)"},
                  {"repeated", fmt::format("<bos>, then ids 1..{} of bench_prompt(s, {}) repeated", kBlock,
                                           kBlock + 1)}}},
                {"runs", nlohmann::json::array()}};
  std::printf(
      "engine: %lld greedy tokens per stream after %lld prompt tokens; varied prompts are the decode "
      "section's ids, repeated prompts a %lld-id block repeated; copy drafts (adaptive depth, at most %d); "
      "prompt cache off; %lld rows a round at most; KV budget %.1f MiB\n",
      static_cast<long long>(options.tokens), static_cast<long long>(options.prompt),
      static_cast<long long>(kBlock), engine_options.max_draft_depth,
      static_cast<long long>(engine_options.max_round_rows), engine_options.kv_budget_gib * 1024);
  // One short request first, untimed: the first forward through the engine pays its one-time costs.
  if (auto warm = run_streams(*out.engine, {bench_prompt(0, options.prompt, vocab)}, 2, true); !warm)
    out.failed_checks.push_back("engine warm-up: " + warm.error().message);
  Section section{options, *out.engine, vocab, out, {}, {}};
  for (int64_t streams : options.streams) run_count(section, streams);
  return out;
}

}  // namespace plumb::cli
