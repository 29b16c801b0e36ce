#pragma once
// Shared setup for the engine tests: one tiny Gemma 4 checkpoint per process (make-tiny's writer), engines on
// a chosen backend, a plain serial generation loop as the reference, and reply comparison that prints the
// first differing index.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "engine/gemma4_lane.hpp"
#include "models/gemma4/model.hpp"
#include "models/gemma4/tiny.hpp"

namespace plumb::engine::testing {

// The backend the suite runs on: "cpu" unless the binary was given --backend.
std::string& backend_name();
Result<std::unique_ptr<ops::Backend>> make_backend();

// The tiny checkpoint's directory, written on first use and removed at exit.
const std::filesystem::path& tiny_dir();
const text::Tokenizer& tiny_tokenizer();

// A Gemma 4 lane on a fresh backend.
std::unique_ptr<LaneModel> tiny_lane(bool path_invariant = true);

// An engine without a worker thread unless `options.background` is set.
std::unique_ptr<Engine> tiny_engine(EngineOptions options, bool path_invariant = true);

// A tiny engine on a fresh backend with graphs on or off, and that backend (owned by the engine) for its
// graph counts; a backend without graphs of its own gets them from the recording backend of the forward's
// replay tests (tests/models/gemma4/recording_backend.hpp).
struct GraphEngine {
  std::unique_ptr<Engine> engine;
  const ops::Backend* backend = nullptr;
};
GraphEngine tiny_engine_graphs(EngineOptions options, bool graphs);

// Serial reference options: one stream, no drafts, no prompt cache.
EngineOptions serial_options();

// The plain loop: the prompt as one chunk, then one row per step through gemma4::forward, keyed draws,
// stop tokens and max_tokens; no engine involved.
std::vector<int32_t> plain_generate(const Request& request);

// Deterministic prompt tokens: <bos> then ordinary pieces; `repetitive` repeats a short phrase.
std::vector<int32_t> prompt_tokens(size_t count, uint32_t seed, bool repetitive = false);

// Two printable ASCII characters of `text`, searched from its middle on, then from its start; empty if none:
// a stop string the reply really contains.
std::string ascii_stop(const std::string& text);

// Runs every request at once on `engine` (submitted together, then rounds until idle).
std::vector<Reply> run_together(Engine& engine, const std::vector<Request>& requests);

// Expects equal tokens and token_sha, naming `what`, the first differing index, expected and got.
void expect_same_reply(const Reply& expected, const Reply& got, const std::string& what);

}  // namespace plumb::engine::testing
