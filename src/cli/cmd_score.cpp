// `plumb score MODEL --tokens 2,10,11 --out F.npy`: teacher-forced logits of every token, after the soft cap,
// as a float32 [n, vocab] NumPy array (row i predicts token i + 1).
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "cli/gemma4_model.hpp"
#include "core/npy.hpp"

namespace plumb::cli {

namespace {

struct ScoreOptions {
  std::string model;
  std::string tokens;
  std::string out;
  int64_t chunk = 256;
  std::string backend = "cpu";
  int threads = 0;
};

int run_score(const ScoreOptions& options) {
  auto tokens = parse_token_list(options.tokens);
  if (!tokens.ok()) return report_bad_input("score", tokens.error().message);
  if (tokens->empty()) return report_bad_input("score", "option '--tokens' holds no ids; expected 2,10,11");
  if (options.chunk <= 0) return report_bad_input("score", "option '--chunk' must be at least 1");
  auto loaded = load_gemma4(options.model, options.backend, options.threads, "score");
  if (!loaded.ok()) return report_bad_input("score", loaded.error().message);
  auto logits = gemma4::score(loaded->model, *tokens, options.chunk);
  if (!logits.ok()) return report_bad_input("score", logits.error().message);
  const Status written = write_npy(options.out, {logits->rows, logits->vocab}, logits->values);
  if (!written.ok()) {
    std::fprintf(stderr, "plumb score: %s\n", written.error().message.c_str());
    return kExitFailure;
  }
  return kExitOk;
}

const RegisterCommand kScore{{
    "score",
    "Teacher-forced logits (after the soft cap) of a token sequence, as a float32 [n, vocab] .npy file",
    [](CLI::App& command) -> CommandRun {
      auto options = std::make_shared<ScoreOptions>();
      command.add_option("model", options->model, "Model directory or org/name[@revision] in the HF cache")
          ->required();
      command.add_option("--tokens", options->tokens, "Comma-separated token ids, e.g. 2,10,11")->required();
      command.add_option("--out", options->out, "Output .npy file")->required();
      command
          .add_option("--chunk", options->chunk, "Rows per forward call (the result does not depend on it)")
          ->capture_default_str();
      command.add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
      command.add_option("--threads", options->threads, "CPU threads (0: one per hardware thread)")
          ->capture_default_str();
      return [options] { return run_score(*options); };
    },
}};

}  // namespace

}  // namespace plumb::cli
