// `plumb run MODEL (--prompt T | --chat T | --tokens 1,2,3) [--max-tokens N --temperature --top-k --top-p
// --min-p --seed --json]`: one generation with keyed sampling. --json prints one object: tokens (the
// generated ids only), text, token_sha (sha256 of the generated ids as little-endian int32 bytes, lower-case
// hex), seed, stop ("stop_token" or "length") and timings.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/gemma4_model.hpp"
#include "engine/sampling.hpp"
#include "models/gemma4/generate.hpp"
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
  int threads = 0;
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

nlohmann::json reply_json(const std::vector<int32_t>& prompt, const gemma4::Generation& generation,
                          uint64_t seed, const std::optional<std::string>& text) {
  const double decode_rows =
      static_cast<double>(generation.tokens.size() > 0 ? generation.tokens.size() - 1 : 0);
  nlohmann::json timings = {
      {"prompt_tokens", prompt.size()},
      {"prompt_seconds", generation.prompt_seconds},
      {"decode_tokens", generation.tokens.size()},
      {"decode_seconds", generation.decode_seconds},
      {"decode_tokens_per_second",
       generation.decode_seconds > 0 ? decode_rows / generation.decode_seconds : 0.0},
  };
  return {{"tokens", generation.tokens},
          {"text", text ? nlohmann::json(*text) : nlohmann::json(nullptr)},
          {"token_sha", engine::token_sha(generation.tokens)},
          {"seed", seed},
          {"stop", generation.stopped ? "stop_token" : "length"},
          {"timings", timings}};
}

int run_generation(const RunOptions& options) {
  const int given = !options.prompt.empty() + !options.chat.empty() + !options.tokens.empty();
  if (given != 1) return report_bad_input("run", "give exactly one of --prompt, --chat and --tokens");
  engine::SamplingOptions sampling{options.temperature, options.top_k, options.top_p, options.min_p,
                                   options.seed};
  if (const Status valid = engine::validate(sampling); !valid.ok())
    return report_bad_input("run", valid.error().message);
  auto loaded = load_gemma4(options.model, options.threads, "run");
  if (!loaded.ok()) return report_bad_input("run", loaded.error().message);
  std::optional<text::Tokenizer> tokenizer;
  if (auto loaded_tokenizer = text::Tokenizer::load(loaded->dir); loaded_tokenizer.ok())
    tokenizer = *loaded_tokenizer;
  auto prompt = prompt_ids(options, *loaded, tokenizer);
  if (!prompt.ok()) return report_bad_input("run", prompt.error().message);
  const uint64_t seed = options.seed ? *options.seed : engine::prompt_seed(*prompt);
  gemma4::GenerateOptions generate_options;
  generate_options.max_tokens = options.max_tokens;
  generate_options.stop_tokens = loaded->model.config.eos_token_ids;
  const auto draw = [&](int64_t position, std::span<const float> row) {
    return engine::sample_keyed(row, sampling, seed, position);
  };
  auto generation = gemma4::generate(loaded->model, *prompt, generate_options, draw);
  if (!generation.ok()) return report_bad_input("run", generation.error().message);
  std::optional<std::string> text;
  if (tokenizer) {
    auto decoded = tokenizer->decode(generation->tokens, /*skip_special=*/true);
    if (decoded.ok()) text = *decoded;
  }
  if (options.json) {
    std::printf("%s\n", reply_json(*prompt, *generation, seed, text).dump().c_str());
  } else {
    std::printf("%s\n",
                text ? text->c_str() : reply_json(*prompt, *generation, seed, text)["tokens"].dump().c_str());
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
      command.add_flag("--json", options->json,
                       "Print {tokens, text, token_sha, seed, stop, timings}; token_sha is the sha256 of the "
                       "generated ids as little-endian int32 bytes");
      command.add_option("--threads", options->threads, "CPU threads (0: one per hardware thread)")
          ->capture_default_str();
      return [options] { return run_generation(*options); };
    },
}};

}  // namespace

}  // namespace plumb::cli
