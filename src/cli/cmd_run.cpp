// `plumb run MODEL (--prompt T | --chat T | --tokens 1,2,3) [--max-tokens N --temperature --top-k --top-p
// --min-p --seed --no-drafts --drafts --parallel --prompt-cache-gib --json]`: one generation through the lane
// engine with keyed sampling. --json prints one object: tokens (the generated ids only), text, token_sha
// (sha256 of the generated ids as little-endian int32 bytes, lower-case hex), seed, stop (the finish reason:
// "stop_token", "stop_string", "length" or "context"), drafts and timings.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/gemma4_model.hpp"
#include "engine/engine.hpp"
#include "engine/gemma4_lane.hpp"
#include "engine/sampling.hpp"
#include "models/gemma4/try_assign.hpp"
#include "text/template/chat_template.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::cli {

namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  std::string chat;
  std::string tokens;
  int64_t max_tokens = 64;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  std::optional<uint64_t> seed;
  bool json = false;
  std::string backend = "cpu";
  int threads = 0;
  bool no_drafts = false;  // the serial reference: one row per step
  std::string drafts = "copies";
  int parallel = 1;
  double prompt_cache_gib = 0.0;  // one request in a fresh process never resumes
};

// The prompt's ids: given, or the chat template rendered for one user message, or the plain prompt (with
// <bos> put first when the tokenizer does not add it: Gemma is trained with it at position 0).
Result<std::vector<int32_t>> prompt_ids(const RunOptions& options, const LoadedGemma4& loaded,
                                        const std::optional<text::Tokenizer>& tokenizer) {
  if (!options.tokens.empty()) return parse_token_list(options.tokens);
  if (!tokenizer)
    return error_at("run", "model", loaded.dir, "has no tokenizer.json", "one for --prompt or --chat",
                    "none");
  if (!options.chat.empty()) {
    PLUMB_TRY_ASSIGN(chat_template, text::ChatTemplate::load(loaded.dir));
    text::ChatRequest request;
    request.messages.push_back({{"role", "user"}, {"content", options.chat}});
    request.add_generation_prompt = true;
    PLUMB_TRY_ASSIGN(rendered, chat_template.render(request));
    return tokenizer->encode(rendered, /*add_special=*/false);
  }
  PLUMB_TRY_ASSIGN(ids, tokenizer->encode(options.prompt, /*add_special=*/true));
  const int32_t bos = loaded.model.config.bos_token_id;
  if (ids.empty() || ids.front() != bos) ids.insert(ids.begin(), bos);
  return ids;
}

nlohmann::json reply_json(const engine::Reply& reply) {
  const double decode_rows = static_cast<double>(reply.tokens.size() > 0 ? reply.tokens.size() - 1 : 0);
  const engine::Timings& t = reply.timings;
  nlohmann::json timings = {
      {"prompt_tokens", reply.prompt_tokens},
      {"cached_tokens", reply.cached_tokens},
      {"prompt_seconds", t.prompt_seconds},
      {"decode_tokens", reply.tokens.size()},
      {"decode_seconds", t.decode_seconds},
      {"decode_tokens_per_second", t.decode_seconds > 0 ? decode_rows / t.decode_seconds : 0.0},
  };
  nlohmann::json drafts = {
      {"proposed", reply.drafted_tokens}, {"accepted", reply.accepted_tokens}, {"rounds", reply.rounds}};
  return {{"tokens", reply.tokens},
          {"text", reply.text},
          {"token_sha", reply.token_sha},
          {"seed", reply.seed},
          {"stop", engine::finish_reason_name(reply.finish)},
          {"drafts", drafts},
          {"timings", timings}};
}

// The engine over the loaded model, driven on this thread.
Result<std::unique_ptr<engine::Engine>> run_engine(const RunOptions& options, LoadedGemma4 loaded,
                                                   std::optional<text::Tokenizer> tokenizer) {
  engine::EngineOptions engine_options;
  PLUMB_TRY_ASSIGN(drafts, engine::parse_draft_mode(options.drafts));
  engine_options.drafts = drafts;
  engine_options.parallel = options.parallel;
  engine_options.prompt_cache_gib = options.prompt_cache_gib;
  engine_options.background = false;
  auto lane = engine::make_gemma4_lane(std::move(loaded.backend), std::move(loaded.model));
  return engine::Engine::create(std::move(lane), std::move(tokenizer), engine_options);
}

int run_generation(const RunOptions& options) {
  const int given = !options.prompt.empty() + !options.chat.empty() + !options.tokens.empty();
  if (given != 1) return report_bad_input("run", "give exactly one of --prompt, --chat and --tokens");
  engine::SamplingOptions sampling{options.temperature, options.top_k, options.top_p, options.min_p,
                                   options.seed};
  if (const Status valid = engine::validate(sampling); !valid.ok())
    return report_bad_input("run", valid.error().message);
  auto loaded = load_gemma4(options.model, options.backend, options.threads, "run");
  if (!loaded.ok()) return report_bad_input("run", loaded.error().message);
  std::optional<text::Tokenizer> tokenizer;
  if (auto loaded_tokenizer = text::Tokenizer::load(loaded->dir); loaded_tokenizer.ok())
    tokenizer = *loaded_tokenizer;
  auto prompt = prompt_ids(options, *loaded, tokenizer);
  if (!prompt.ok()) return report_bad_input("run", prompt.error().message);
  const bool has_tokenizer = tokenizer.has_value();
  auto lane_engine = run_engine(options, std::move(*loaded), std::move(tokenizer));
  if (!lane_engine.ok()) return report_bad_input("run", lane_engine.error().message);
  engine::Request request;
  request.prompt = std::move(*prompt);
  request.sampling = sampling;
  request.max_tokens = options.max_tokens;
  request.draft = !options.no_drafts;
  auto reply = (*lane_engine)->generate(std::move(request));
  if (!reply.ok()) return report_bad_input("run", reply.error().message);
  if (options.json) {
    std::printf("%s\n", reply_json(*reply).dump().c_str());
  } else {
    std::printf("%s\n", has_tokenizer ? reply->text.c_str() : nlohmann::json(reply->tokens).dump().c_str());
  }
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

const RegisterCommand kRun{{
    "run",
    "One generation with keyed sampling (greedy at temperature 0)",
    [](CLI::App& command) -> CommandRun {
      auto options = std::make_shared<RunOptions>();
      command.add_option("model", options->model, "Model directory or org/name[@revision] in the HF cache")
          ->required();
      command.add_option("--prompt", options->prompt, "Plain text prompt");
      command.add_option("--chat", options->chat,
                         "One user message, rendered with the model's chat template");
      command.add_option("--tokens", options->tokens, "Prompt token ids, comma-separated");
      command.add_option("--max-tokens", options->max_tokens, "Most tokens to generate")
          ->capture_default_str();
      command.add_option("--temperature", options->temperature, "0: greedy (ties to the lowest id)")
          ->capture_default_str();
      command.add_option("--top-k", options->top_k, "0: off")->capture_default_str();
      command.add_option("--top-p", options->top_p, "1: off")->capture_default_str();
      command.add_option("--min-p", options->min_p, "0: off")->capture_default_str();
      command.add_option("--seed", options->seed, "Sampling seed (default: derived from the prompt ids)");
      command.add_flag(
          "--json", options->json,
          "Print {tokens, text, token_sha, seed, stop, drafts, timings}; token_sha is the sha256 "
          "of the generated ids as little-endian int32 bytes");
      command.add_flag("--no-drafts", options->no_drafts, "The serial reference: no drafts (same tokens)");
      command.add_option("--drafts", options->drafts, "Drafter: none or copies")->capture_default_str();
      command.add_option("--parallel", options->parallel, "Most streams in a round")->capture_default_str();
      command.add_option("--prompt-cache-gib", options->prompt_cache_gib, "Prompt-cache budget (0: off)")
          ->capture_default_str();
      command.add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
      command.add_option("--threads", options->threads, "CPU threads (0: one per hardware thread)")
          ->capture_default_str();
      return [options] { return run_generation(*options); };
    },
}};

}  // namespace

}  // namespace plumb::cli
