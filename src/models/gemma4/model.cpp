#include <algorithm>
#include <filesystem>

#include "models/gemma4/model.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

Result<Model> load_model(Config config, std::shared_ptr<const Checkpoint> checkpoint, ops::Backend& backend) {
  Model model;
  PLUMB_TRY_ASSIGN(weights, load_weights(config, std::move(checkpoint), backend));
  model.config = std::move(config);
  model.weights = std::move(weights);
  model.backend = &backend;
  return model;
}

namespace {

// generation_config.json's eos_token_id, when the file exists, replaces config.json's (instruction-tuned
// checkpoints stop on <turn|> there).
Status read_generation_eos(const std::string& model_dir, Config& config) {
  const std::string path = model_dir + "/generation_config.json";
  if (!std::filesystem::exists(path)) return {};
  PLUMB_TRY_ASSIGN(fields, Fields::load(path));
  if (!fields.has("eos_token_id")) return {};
  PLUMB_TRY_ASSIGN(eos, fields.integer_or_integers("eos_token_id"));
  config.eos_token_ids.assign(eos.begin(), eos.end());
  return {};
}

}  // namespace

Result<Model> load_model(const std::string& model_dir, ops::Backend& backend) {
  PLUMB_TRY_ASSIGN(config, load_config(model_dir));
  PLUMB_TRY(read_generation_eos(model_dir, config));
  PLUMB_TRY_ASSIGN(checkpoint, Checkpoint::open(model_dir));
  return load_model(std::move(config), std::make_shared<const Checkpoint>(std::move(checkpoint)), backend);
}

Result<StreamCache> new_stream(const Model& model, int64_t max_chunk_rows) {
  return StreamCache::create(model.config, *model.backend, max_chunk_rows);
}

Result<Logits> score(const Model& model, std::span<const int32_t> tokens, int64_t chunk_rows) {
  PLUMB_TRY_ASSIGN(stream, new_stream(model, chunk_rows));
  Logits all;
  all.vocab = model.config.vocab;
  for (size_t first = 0; first < tokens.size(); first += static_cast<size_t>(chunk_rows)) {
    const size_t count = std::min(tokens.size() - first, static_cast<size_t>(chunk_rows));
    const StreamChunk chunk{&stream, tokens.subspan(first, count), static_cast<int64_t>(first),
                            LogitRows::all};
    PLUMB_TRY_ASSIGN(logits, forward(model, std::span(&chunk, 1)));
    all.values.insert(all.values.end(), logits.values.begin(), logits.values.end());
    all.rows += logits.rows;
  }
  return all;
}

}  // namespace plumb::gemma4
