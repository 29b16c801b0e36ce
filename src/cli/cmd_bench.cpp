// `plumb bench MODEL [--backend cpu|cuda] [--streams 1,8,32] [--prompts 2048,8192] [--engine-streams 1,8,32]
// [--json F]`: decode tokens/s of one stream and the aggregate of several streams batched in one forward,
// prompt tokens/s and time to first token, peak device memory and KV bytes per token; with --engine-streams,
// aggregate tokens/s through the lane engine with copy drafts off and on (bench_engine.hpp). Each speed is
// printed with its bound (bytes per step over the copy bandwidth, FLOPs over the GEMM library's bf16 rate,
// both measured in this run) and the fraction reached. Speeds are quoted only after the run's tokens check
// out: a rerun gives the same tokens, stream 0 of a batch gives the solo run's tokens, and repeated prompts
// give the same first token.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_bounds.hpp"
#include "cli/bench_engine.hpp"
#include "cli/bench_model.hpp"
#include "cli/command.hpp"
#include "cli/gemma4_model.hpp"
#include "engine/sampling.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::cli {

namespace {

struct BenchOptions {
  std::string model;
  std::string backend = "cpu";
  int threads = 0;
  std::string streams = "1,8,32";
  std::string prompts = "2048,8192";
  int64_t decode_prompt = 128;
  int64_t decode_steps = 32;
  int repeats = 3;
  int64_t copy_mib = 1024;
  int64_t gemm_size = 8192;
  std::string json_path;
  bool profile = false;
  std::string engine_streams;  // empty: no engine section
  int64_t engine_tokens = 64;
  int64_t engine_prompt = 128;
};

struct Bench {
  const BenchOptions& options;
  LoadedGemma4& loaded;
  ModelCosts costs;
  double bandwidth = 0;  // bytes read + written per second
  double gemm = 0;       // FLOP/s; 0 when not measured
  nlohmann::json record;
  std::vector<std::string> failed_checks;
};

void measure_bounds(Bench& bench) {
  ops::Backend& backend = *bench.loaded.backend;
  auto bandwidth = copy_bandwidth(backend, bench.options.copy_mib << 20);
  bench.bandwidth = bandwidth ? *bandwidth : 0;
  auto gemm = library_gemm_rate(backend, bench.options.gemm_size);
  bench.gemm = gemm ? *gemm : 0;
  std::printf("bounds: device copy %.1f GB/s (read + written, %lld MiB); bf16 GEMM %s\n",
              bench.bandwidth * 1e-9, static_cast<long long>(bench.options.copy_mib),
              gemm ? fmt::format("{:.1f} TFLOP/s (cuBLAS, {}^3, random operands)", *gemm * 1e-12,
                                 bench.options.gemm_size)
                         .c_str()
                   : gemm.error().message.c_str());
  bench.record["bounds"] = {{"copy_bytes_per_second", bench.bandwidth},
                            {"gemm_flops_per_second", bench.gemm}};
}

std::string fraction(double reached, double bound) {
  return bound > 0 ? fmt::format("{:.1f}%", 100.0 * reached / bound) : std::string("n/a");
}

void decode(Bench& bench, int64_t streams, const std::vector<int32_t>& solo_tokens) {
  const BenchOptions& o = bench.options;
  auto run = run_decode(bench.loaded.model, streams, o.decode_prompt, o.decode_steps, o.profile);
  if (!run) {
    bench.failed_checks.push_back(fmt::format("decode {} streams: {}", streams, run.error().message));
    return;
  }
  if (!solo_tokens.empty() && run->tokens[0] != solo_tokens)
    bench.failed_checks.push_back(
        fmt::format("decode {} streams: stream 0 differs from the solo run", streams));
  const double step = median(run->step_seconds);
  const double tokens_per_second = static_cast<double>(streams) / step;
  double bytes =
      bench.costs.weight_bytes;  // per step: the weights once, each stream's KV at its mean position
  const int64_t position = o.decode_prompt + o.decode_steps / 2;
  bytes += static_cast<double>(streams) * kv_read_bytes(bench.loaded.model, position);
  const double bound = bench.bandwidth > 0 ? static_cast<double>(streams) * bench.bandwidth / bytes : 0;
  std::printf(
      "decode  %3lld streams: %9.1f tokens/s (%.3f ms/step, median of %zu); bound %.1f tokens/s "
      "(%.2f GB/step at %.0f GB/s); %s of bound; stream 0 token_sha %.12s\n",
      static_cast<long long>(streams), tokens_per_second, step * 1e3, run->step_seconds.size(), bound,
      bytes * 1e-9, bench.bandwidth * 1e-9, fraction(tokens_per_second, bound).c_str(),
      engine::token_sha(run->tokens[0]).c_str());
  if (bench.loaded.model.backend->graphs_enabled())
    std::printf("  graphs: %lld of %zu steps replayed a recorded graph\n",
                static_cast<long long>(run->graph_replays), run->step_seconds.size());
  std::fputs(run->profile.c_str(), stdout);
  bench.record["decode"].push_back({{"streams", streams},
                                    {"graph_replays", run->graph_replays},
                                    {"tokens_per_second", tokens_per_second},
                                    {"step_seconds", run->step_seconds},
                                    {"bytes_per_step", bytes},
                                    {"bound_tokens_per_second", bound},
                                    {"stream0_token_sha", engine::token_sha(run->tokens[0])}});
}

void prompt(Bench& bench, int64_t length) {
  auto run = run_prompt(bench.loaded.model, length, bench.options.repeats, bench.options.profile);
  if (!run) {
    bench.failed_checks.push_back(fmt::format("prompt {}: {}", length, run.error().message));
    return;
  }
  for (int32_t token : run->first_tokens)
    if (token != run->first_tokens.front())
      bench.failed_checks.push_back(
          fmt::format("prompt {}: the first token differs between repeats", length));
  const double seconds = median(run->seconds);
  const double tokens_per_second = static_cast<double>(length) / seconds;
  const double flops = prompt_flops(bench.loaded.model, length);
  const double bound = bench.gemm > 0 ? static_cast<double>(length) * bench.gemm / flops : 0;
  const std::string bound_text =
      bound > 0 ? fmt::format("bound {:.1f} tokens/s ({:.1f} TFLOP at {:.1f} TFLOP/s); {} of bound", bound,
                              flops * 1e-12, bench.gemm * 1e-12, fraction(tokens_per_second, bound))
                : fmt::format("{:.1f} TFLOP; no GEMM bound measured", flops * 1e-12);
  std::printf(
      "prompt %6lld tokens: %9.1f tokens/s, time to first token %.3f s (median of %zu); %s; first token %d\n",
      static_cast<long long>(length), tokens_per_second, seconds, run->seconds.size(), bound_text.c_str(),
      run->first_tokens.front());
  std::fputs(run->profile.c_str(), stdout);
  bench.record["prompt"].push_back({{"tokens", length},
                                    {"tokens_per_second", tokens_per_second},
                                    {"seconds", run->seconds},
                                    {"flops", flops},
                                    {"bound_tokens_per_second", bound},
                                    {"first_token", run->first_tokens.front()}});
}

Result<std::vector<int64_t>> parse_counts(const std::string& text, const std::string& option) {
  PLUMB_TRY_ASSIGN(ids, parse_token_list(text));
  std::vector<int64_t> counts;
  for (int32_t id : ids) {
    if (id <= 0) return error_at("bench", "option", option, "holds a count below 1", "counts >= 1", text);
    counts.push_back(id);
  }
  return counts;
}

void print_model(Bench& bench, double load_seconds) {
  const ModelCosts& c = bench.costs;
  std::printf(
      "model: %s, %lld layers, matmul weights %.2f GB (head included), loaded in %.1f s; KV %.1f KiB per "
      "token on global layers + %.1f KiB on sliding layers (last %lld positions)\n",
      bench.loaded.dir.c_str(), static_cast<long long>(bench.loaded.model.config.layer_count()),
      c.weight_bytes * 1e-9, load_seconds, c.kv_global_bytes / 1024, c.kv_sliding_bytes / 1024,
      static_cast<long long>(c.sliding_window));
  bench.record["model"] = {{"dir", bench.loaded.dir},
                           {"weight_bytes", c.weight_bytes},
                           {"load_seconds", load_seconds},
                           {"kv_bytes_per_token_global", c.kv_global_bytes},
                           {"kv_bytes_per_token_sliding", c.kv_sliding_bytes},
                           {"sliding_window", c.sliding_window}};
}

int run_bench(const BenchOptions& options) {
  auto streams = parse_counts(options.streams, "--streams");
  if (!streams) return report_bad_input("bench", streams.error().message);
  auto prompts = parse_counts(options.prompts, "--prompts");
  if (!prompts) return report_bad_input("bench", prompts.error().message);
  Result<std::vector<int64_t>> engine_streams = std::vector<int64_t>{};
  if (!options.engine_streams.empty())
    engine_streams = parse_counts(options.engine_streams, "--engine-streams");
  if (!engine_streams) return report_bad_input("bench", engine_streams.error().message);
  for (const auto& [count, option] : {std::pair{options.engine_tokens, "--engine-tokens"},
                                      std::pair{options.engine_prompt, "--engine-prompt"}})
    if (count < 1)
      return report_bad_input(
          "bench", error_at("bench", "option", option, "holds a count below 1", ">= 1", std::to_string(count))
                       .message);
  const auto start = std::chrono::steady_clock::now();
  auto loaded = load_gemma4(options.model, options.backend, options.threads, "bench");
  if (!loaded) return report_bad_input("bench", loaded.error().message);
  if (const Status synced = loaded->backend->synchronize(); !synced.ok())
    return report_bad_input("bench", synced.error().message);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Bench bench{options, *loaded, model_costs(loaded->model), 0, 0, {}, {}};
  if (options.profile && !enable_op_profile(*loaded->backend))
    std::printf("profile: the %s backend does not time its ops\n",
                std::string(loaded->backend->name()).c_str());
  bench.record["backend"] = backend_description(*loaded->backend);
  std::printf("backend: %s\n", backend_description(*loaded->backend).c_str());
  print_model(bench, load_seconds);
  measure_bounds(bench);
  auto solo = run_decode(loaded->model, 1, options.decode_prompt, options.decode_steps);
  if (!solo) return report_bad_input("bench", solo.error().message);
  for (int64_t count : *streams) decode(bench, count, solo->tokens[0]);
  for (int64_t length : *prompts) prompt(bench, length);
  // The engine takes the backend and the model; it is kept alive until the peak below is read.
  ops::Backend* backend = loaded->backend.get();
  EngineBench engine_bench;
  if (!engine_streams->empty()) {
    engine_bench =
        run_engine_bench(std::move(*loaded), {*engine_streams, options.engine_tokens, options.engine_prompt});
    bench.record["engine"] = engine_bench.record;
    for (std::string& failed : engine_bench.failed_checks) bench.failed_checks.push_back(std::move(failed));
  }
  const int64_t peak = peak_device_bytes(*backend);
  std::printf("peak device memory: %s\n",
              peak >= 0 ? fmt::format("{:.2f} GiB (the backend's allocator)", peak / double(1 << 30)).c_str()
                        : "not reported by this backend");
  bench.record["peak_device_bytes"] = peak;
  bench.record["failed_checks"] = bench.failed_checks;
  if (!options.json_path.empty()) std::ofstream(options.json_path) << bench.record.dump(2) << "\n";
  for (const std::string& failed : bench.failed_checks)
    std::fprintf(stderr, "plumb bench: check failed: %s\n", failed.c_str());
  const char* engine_checks = engine_streams->empty()
                                  ? ""
                                  : "; through the engine, every stream's tokens are the same with drafts on "
                                    "as off and in every stream count";
  std::printf("checks: %s%s\n",
              bench.failed_checks.empty()
                  ? "every stream 0 equals the solo run; repeated prompts give the same first token"
                  : "FAILED (speeds above are not valid)",
              bench.failed_checks.empty() ? engine_checks : "");
  return bench.failed_checks.empty() ? kExitOk : kExitFailure;
}

const RegisterCommand kBench{{
    "bench",
    "Decode and prompt speed of a Gemma 4 checkpoint against the measured bandwidth and GEMM bounds",
    [](CLI::App& command) -> CommandRun {
      auto options = std::make_shared<BenchOptions>();
      command.add_option("model", options->model, "Model directory or org/name[@revision] in the HF cache")
          ->required();
      command.add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
      command.add_option("--threads", options->threads, "CPU threads (0: one per hardware thread)")
          ->capture_default_str();
      command.add_option("--streams", options->streams, "Decode stream counts (rows per step)")
          ->capture_default_str();
      command.add_option("--prompts", options->prompts, "Prompt lengths, each one forward from position 0")
          ->capture_default_str();
      command.add_option("--decode-prompt", options->decode_prompt, "Prompt tokens before decoding")
          ->capture_default_str();
      command.add_option("--decode-steps", options->decode_steps, "Timed decode steps")
          ->capture_default_str();
      command.add_option("--repeats", options->repeats, "Timed repeats of each prompt (after one warm-up)")
          ->capture_default_str();
      command.add_option("--copy-mib", options->copy_mib, "Buffer size of the copy-bandwidth bound")
          ->capture_default_str();
      command.add_option("--gemm-size", options->gemm_size, "Matrix size of the GEMM bound")
          ->capture_default_str();
      command.add_option("--json", options->json_path, "Also write every number to this JSON file");
      command.add_option("--engine-streams", options->engine_streams,
                         "Stream counts through the lane engine, each with copy drafts off and on (empty: "
                         "no engine section)");
      command.add_option("--engine-tokens", options->engine_tokens, "Greedy tokens per engine stream")
          ->capture_default_str();
      command.add_option("--engine-prompt", options->engine_prompt, "Prompt tokens per engine stream")
          ->capture_default_str();
      command.add_flag("--profile", options->profile,
                       "Print each op's device time per forward (CUDA; events around every launch)");
      return [options] { return run_bench(*options); };
    },
}};

}  // namespace

}  // namespace plumb::cli
