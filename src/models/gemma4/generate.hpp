#pragma once
// Single-stream generation: the prompt in chunks, then one row per step; each token is chosen by `draw` from
// the logits row at its absolute position (keyed sampling lives in the engine layer, above this one). The
// engine's rounds (issue 7) replace this for serving; `plumb run` and the invariance tests use it.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "models/gemma4/model.hpp"

namespace plumb::gemma4 {

// Chooses the token for absolute position `position` from the logits row that predicts it.
using Draw = std::function<int32_t(int64_t position, std::span<const float> row)>;

struct GenerateOptions {
  int64_t max_tokens = 16;
  std::vector<int32_t> stop_tokens;  // generation ends after emitting one of these
  int64_t prompt_chunk_rows = 256;
};

struct Generation {
  std::vector<int32_t> tokens;  // generated ids only
  bool stopped = false;         // ended on a stop token
  double prompt_seconds = 0.0;
  double decode_seconds = 0.0;
};

Result<Generation> generate(const Model& model, std::span<const int32_t> prompt,
                            const GenerateOptions& options, const Draw& draw);

}  // namespace plumb::gemma4
