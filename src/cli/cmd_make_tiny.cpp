// `plumb make-tiny FAMILY DIR [--bits B --group G] [--seed S]`: a deterministic tiny checkpoint with its
// tokenizer and chat template, for tests and the demo.
#include <cstdio>
#include <optional>
#include <string>

#include "cli/command.hpp"
#include "models/gemma4/tiny.hpp"

namespace plumb::cli {

namespace {

struct MakeTinyOptions {
  std::string family;
  std::string dir;
  std::optional<int> bits;
  int group = 64;
  uint64_t seed = 4;
  std::string geometry;
  int threads = 0;
};

int run_make_tiny(const MakeTinyOptions& options) {
  if (options.family != "gemma4")
    return report_bad_input("make-tiny",
                            "family '" + options.family + "' has no tiny checkpoint; expected gemma4");
  gemma4::TinyOptions tiny;
  if (!options.geometry.empty()) {
    auto real = gemma4::geometry_options(options.geometry);
    if (!real.ok()) return report_bad_input("make-tiny", real.error().message);
    tiny = *real;
  }
  tiny.threads = options.threads;
  tiny.bits = options.bits;
  tiny.group = options.group;
  tiny.seed = options.seed;
  const Status written = gemma4::write_tiny_checkpoint(options.dir, tiny);
  if (!written.ok()) return report_bad_input("make-tiny", written.error().message);
  std::printf("%s\n", options.dir.c_str());
  return kExitOk;
}

const RegisterCommand kMakeTiny{{
    "make-tiny",
    "Write a deterministic tiny checkpoint (config, weights, tokenizer, chat template)",
    [](CLI::App& command) -> CommandRun {
      auto options = std::make_shared<MakeTinyOptions>();
      command.add_option("family", options->family, "Model family: gemma4")->required();
      command.add_option("dir", options->dir, "Output directory")->required();
      command.add_option("--bits", options->bits, "MLX affine bits (2, 3, 4, 5, 6 or 8); bf16 when absent");
      command.add_option("--group", options->group, "MLX affine group size (32, 64 or 128)")
          ->capture_default_str();
      command.add_option("--seed", options->seed, "Seed of the random weights")->capture_default_str();
      command.add_option(
          "--geometry", options->geometry,
          "Random weights at a real geometry instead: 12b or 31b (tens of GB; the tiny tokenizer)");
      command.add_option("--threads", options->threads, "Threads generating weights (0: up to 32)")
          ->capture_default_str();
      return [options] { return run_make_tiny(*options); };
    },
}};

}  // namespace

}  // namespace plumb::cli
