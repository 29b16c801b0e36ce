#pragma once
// What `plumb bench --engine-streams 1,8,32` runs: aggregate tokens/s through the lane engine (rounds packing
// several streams, copy drafts verified in the same forward) with drafts off and on, the copy drafts'
// acceptance on two kinds of prompt, and checks that drafts and stream counts never change a stream's tokens.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/gemma4_model.hpp"
#include "engine/engine.hpp"

namespace plumb::cli {

struct EngineBenchOptions {
  std::vector<int64_t> streams;  // concurrent stream counts, each run with drafts off and on
  int64_t tokens = 64;           // greedy tokens generated per stream (eos does not stop them)
  int64_t prompt = 128;          // prompt tokens per stream
};

// The repeated prompt of `stream`: <bos> (2), then a 16-id block repeated up to `length` ids; the block is
// ids 1..16 of bench_prompt(stream, 17, vocab), so every stream repeats a different block.
std::vector<int32_t> repeated_prompt(int64_t stream, int64_t length, int64_t vocab);

struct EngineBench {
  // Owns the backend and the model from the call on; kept so that the caller can still read the backend.
  std::unique_ptr<engine::Engine> engine;
  nlohmann::json record;                   // the --json record's "engine" object
  std::vector<std::string> failed_checks;  // tokens that differ, replies that ended early, errors
};

// Builds one engine (prompt cache off, a KV budget that admits the largest stream count at once) over the
// loaded model and, for each stream count, runs varied and repeated prompts with drafts off and then on,
// printing one line per run. Every stream's tokens must be the same with drafts on as off, and the same in
// every stream count.
EngineBench run_engine_bench(LoadedGemma4 loaded, const EngineBenchOptions& options);

}  // namespace plumb::cli
