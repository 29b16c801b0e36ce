#include "models/gemma4/generate.hpp"

#include <algorithm>
#include <chrono>

#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<Generation> generate(const Model& model, std::span<const int32_t> prompt,
                            const GenerateOptions& options, const Draw& draw) {
  if (prompt.empty())
    return error_at("gemma4.generate", "prompt", "tokens", "is empty", "at least one token", "none");
  Generation generation;
  if (options.max_tokens <= 0) return generation;
  const int64_t chunk_rows = std::max<int64_t>(1, options.prompt_chunk_rows);
  PLUMB_TRY_ASSIGN(stream, new_stream(model, chunk_rows));
  const auto start = std::chrono::steady_clock::now();
  Logits last;
  for (size_t first = 0; first < prompt.size(); first += static_cast<size_t>(chunk_rows)) {
    const size_t count = std::min(prompt.size() - first, static_cast<size_t>(chunk_rows));
    const bool final_chunk = first + count == prompt.size();
    const StreamChunk chunk{&stream, prompt.subspan(first, count), static_cast<int64_t>(first),
                            final_chunk ? LogitRows::last : LogitRows::none};
    PLUMB_TRY_ASSIGN(logits, forward(model, std::span(&chunk, 1)));
    last = std::move(logits);
  }
  generation.prompt_seconds = seconds_since(start);
  const auto decode_start = std::chrono::steady_clock::now();
  int64_t position = static_cast<int64_t>(prompt.size());
  while (true) {
    const int32_t token = draw(position, last.row(0));
    if (token < 0 || token >= model.config.vocab)
      return error_at("gemma4.generate", "drawn token at position", std::to_string(position),
                      "is outside the vocabulary", "0 <= id < vocab", std::to_string(token));
    generation.tokens.push_back(token);
    const bool stop =
        std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end();
    if (stop) generation.stopped = true;
    if (stop || static_cast<int64_t>(generation.tokens.size()) >= options.max_tokens) break;
    const StreamChunk step{&stream, std::span(&generation.tokens.back(), 1), position, LogitRows::last};
    PLUMB_TRY_ASSIGN(logits, forward(model, std::span(&step, 1)));
    last = std::move(logits);
    ++position;
  }
  generation.decode_seconds = seconds_since(decode_start);
  return generation;
}

}  // namespace plumb::gemma4
