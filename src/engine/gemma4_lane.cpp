#include "engine/gemma4_lane.hpp"

#include <algorithm>

#include "models/gemma4/try_assign.hpp"

namespace plumb::engine {

namespace {

// A Gemma 4 stream cache plus the highest position ever written: a roll-back lowers the cache's end, but the
// ring slots past it were overwritten all the same, so reach is judged from the highest write.
class Gemma4State final : public LaneState {
 public:
  Gemma4State(gemma4::StreamCache cache, const gemma4::Model& model)
      : cache_(std::move(cache)), model_(model) {}

  int64_t end() const override { return cache_.end(); }
  int64_t bytes() const override { return cache_.bytes(); }
  Status roll_back(int64_t end) override { return cache_.roll_back(end); }

  bool can_resume_at(int64_t position) const override {
    if (position < 0 || position > cache_.end()) return false;
    const auto& layers = cache_.layers();
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!layers[i].sliding) continue;
      const int64_t oldest_kept = std::max<int64_t>(0, written_end_ - layers[i].capacity);
      const int64_t oldest_needed = std::max<int64_t>(0, position - model_.config.layers[i].window + 1);
      if (oldest_needed < oldest_kept) return false;
    }
    return true;
  }

  Result<std::unique_ptr<LaneState>> clone() const override {
    PLUMB_TRY_ASSIGN(copy, cache_.clone(*model_.backend));
    auto state = std::make_unique<Gemma4State>(std::move(copy), model_);
    state->written_end_ = written_end_;
    return std::unique_ptr<LaneState>(std::move(state));
  }

  gemma4::StreamCache& cache() { return cache_; }
  void wrote(int64_t end) { written_end_ = std::max(written_end_, end); }

 private:
  gemma4::StreamCache cache_;
  const gemma4::Model& model_;
  int64_t written_end_ = 0;
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

  Result<LaneLogits> forward(std::span<const LaneChunk> chunks) override {
    std::vector<gemma4::StreamChunk> batch;
    batch.reserve(chunks.size());
    for (const LaneChunk& chunk : chunks) {
      const gemma4::LogitRows rows = chunk.all_logits    ? gemma4::LogitRows::all
                                     : chunk.last_logits ? gemma4::LogitRows::last
                                                         : gemma4::LogitRows::none;
      auto* state = static_cast<Gemma4State*>(chunk.state);
      batch.push_back({&state->cache(), chunk.tokens, chunk.first_position, rows});
    }
    auto logits = gemma4::forward(model_, batch);
    for (const LaneChunk& chunk : chunks)
      static_cast<Gemma4State*>(chunk.state)
          ->wrote(chunk.first_position + static_cast<int64_t>(chunk.tokens.size()));
    if (!logits.ok()) return logits.error();
    LaneLogits out;
    out.rows = logits->rows;
    out.vocab = logits->vocab;
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
