#pragma once
// A loaded Gemma 4 text model and its forward, written once against the op set (DESIGN.md §1): a call runs
// the chunks of one or more streams as one batch of rows, each row at its absolute position, and returns the
// soft-capped logits of the rows asked for.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/gemma4/config.hpp"
#include "models/gemma4/forward_graphs.hpp"
#include "models/gemma4/kv_cache.hpp"
#include "models/gemma4/weights.hpp"
#include "ops/backend.hpp"

namespace plumb::gemma4 {

struct Model {
  Config config;
  Weights weights;
  ops::Backend* backend = nullptr;
  // Kept tensors and graph keys of decode-sized forwards where the backend has graphs on; like the backend,
  // used by one forward at a time.
  std::shared_ptr<ForwardGraphs> graphs = std::make_shared<ForwardGraphs>();
};

// Reads config.json (refusing unbuilt parts before any weight is read), then the checkpoint in `model_dir`.
Result<Model> load_model(const std::string& model_dir, ops::Backend& backend);
// The same from an already parsed config and opened checkpoint.
Result<Model> load_model(Config config, std::shared_ptr<const Checkpoint> checkpoint, ops::Backend& backend);

enum class LogitRows : uint8_t { none, last, all };

// One stream's rows in a forward call: `tokens` at positions first_position, first_position + 1, ...
// first_position is at most the cache's end (a smaller one rewrites from there, after rejected drafts).
// With `draw` set, each of the chunk's logits rows is drawn on the device (ops::sample) for the position the
// drawn token takes (the row's position + 1; draw->position is ignored); either every chunk with logits
// rows sets it or none does.
struct StreamChunk {
  StreamCache* cache = nullptr;
  std::span<const int32_t> tokens;
  int64_t first_position = 0;
  LogitRows logits = LogitRows::last;
  std::optional<ops::SampleParams> draw;
};

struct Logits {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<float> values;   // [rows, vocab]: the chunks' requested rows in order, soft-capped, bf16 values
  std::vector<int32_t> draws;  // [rows] instead of values when the chunks ask for draws
  std::span<const float> row(int64_t r) const {
    return std::span<const float>(values).subspan(static_cast<size_t>(r * vocab), static_cast<size_t>(vocab));
  }
};

// Runs the chunks as one batch; every chunk's cache advances to first_position + its rows.
Result<Logits> forward(const Model& model, std::span<const StreamChunk> chunks);

// Creates a cache for one stream of `model`.
Result<StreamCache> new_stream(const Model& model, int64_t max_chunk_rows = 256);

// Teacher-forced logits for every token of `tokens` from position 0 in a fresh stream, in chunks of
// `chunk_rows`.
Result<Logits> score(const Model& model, std::span<const int32_t> tokens, int64_t chunk_rows = 256);

}  // namespace plumb::gemma4
