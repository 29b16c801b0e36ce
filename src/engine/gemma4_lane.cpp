#include "engine/gemma4_lane.hpp"

#include "models/gemma4/try_assign.hpp"

namespace plumb::engine {

namespace {

// A Gemma 4 stream cache; the cache judges its own sliding-ring reach (from the highest position written).
class Gemma4State final : public LaneState {
 public:
  Gemma4State(gemma4::StreamCache cache, const gemma4::Model& model)
      : cache_(std::move(cache)), model_(model) {}

  int64_t end() const override { return cache_.end(); }
  int64_t bytes() const override { return cache_.bytes(); }
  Status roll_back(int64_t end) override { return cache_.roll_back(end); }
  bool can_resume_at(int64_t position) const override { return cache_.can_resume_at(position); }

  Result<std::unique_ptr<LaneState>> clone() const override {
    PLUMB_TRY_ASSIGN(copy, cache_.clone(*model_.backend));
    return std::unique_ptr<LaneState>(std::make_unique<Gemma4State>(std::move(copy), model_));
  }

  gemma4::StreamCache& cache() { return cache_; }

 private:
  gemma4::StreamCache cache_;
  const gemma4::Model& model_;
};

class Gemma4Lane final : public LaneModel {
 public:
  Gemma4Lane(std::unique_ptr<ops::Backend> backend, gemma4::Model model, bool path_invariant)
      : backend_(std::move(backend)), model_(std::move(model)), path_invariant_(path_invariant) {
    model_.backend = backend_.get();
  }

  std::string_view family() const override { return "gemma4"; }
  std::string_view backend_name() const override { return backend_->name(); }
  int64_t vocab() const override { return model_.config.vocab; }
  int64_t context() const override { return model_.config.max_position_embeddings; }
  std::vector<int32_t> eos_tokens() const override { return model_.config.eos_token_ids; }
  bool path_invariant() const override { return path_invariant_; }

  Result<std::unique_ptr<LaneState>> new_state(int64_t max_chunk_rows) override {
    PLUMB_TRY_ASSIGN(cache, gemma4::new_stream(model_, max_chunk_rows));
    return std::unique_ptr<LaneState>(std::make_unique<Gemma4State>(std::move(cache), model_));
  }

  int64_t state_bytes(int64_t positions, int64_t max_chunk_rows) const override {
    return gemma4::StreamCache::bytes_for(model_.config, positions, max_chunk_rows);
  }

  int64_t free_device_bytes() const override { return backend_->free_memory_bytes(); }

  Result<LaneLogits> forward(std::span<const LaneChunk> chunks) override {
    std::vector<gemma4::StreamChunk> batch;
    batch.reserve(chunks.size());
    for (const LaneChunk& chunk : chunks) {
      const gemma4::LogitRows rows = chunk.all_logits    ? gemma4::LogitRows::all
                                     : chunk.last_logits ? gemma4::LogitRows::last
                                                         : gemma4::LogitRows::none;
      auto* state = static_cast<Gemma4State*>(chunk.state);
      batch.push_back({&state->cache(), chunk.tokens, chunk.first_position, rows, chunk.draw});
    }
    auto logits = gemma4::forward(model_, batch);
    if (!logits.ok()) return logits.error();
    LaneLogits out;
    out.rows = logits->rows;
    out.vocab = logits->vocab;
    out.draws = std::move(logits->draws);
    out.values = std::move(logits->values);
    return out;
  }

 private:
  std::unique_ptr<ops::Backend> backend_;
  gemma4::Model model_;
  bool path_invariant_;
};

}  // namespace

std::unique_ptr<LaneModel> make_gemma4_lane(std::unique_ptr<ops::Backend> backend, gemma4::Model model,
                                            bool path_invariant) {
  return std::make_unique<Gemma4Lane>(std::move(backend), std::move(model), path_invariant);
}

}  // namespace plumb::engine
