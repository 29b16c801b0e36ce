#include "scripted_lane.hpp"

#include <algorithm>

namespace plumb::server::testing {

namespace {

class ScriptedState : public engine::LaneState {
 public:
  std::vector<int32_t> tokens;  // the sequence, positions [0, end())
  int64_t end() const override { return static_cast<int64_t>(tokens.size()); }
  int64_t bytes() const override { return static_cast<int64_t>(tokens.capacity() * sizeof(int32_t)); }
  Status roll_back(int64_t position) override {
    if (position < 0 || position > end())
      return error_at("scripted lane", "position", std::to_string(position), "is outside the state");
    tokens.resize(static_cast<size_t>(position));
    return {};
  }
  bool can_resume_at(int64_t position) const override { return position >= 0 && position <= end(); }
  Result<std::unique_ptr<engine::LaneState>> clone() const override {
    auto copy = std::make_unique<ScriptedState>();
    copy->tokens = tokens;
    return std::unique_ptr<engine::LaneState>(std::move(copy));
  }
};

class ScriptedLane : public engine::LaneModel {
 public:
  explicit ScriptedLane(Script script) : script_(std::move(script)) {}
  std::string_view family() const override { return "scripted"; }
  std::string_view backend_name() const override { return "none"; }
  int64_t vocab() const override { return script_.vocab; }
  int64_t context() const override { return script_.context; }
  std::vector<int32_t> eos_tokens() const override { return script_.eos; }
  bool path_invariant() const override { return true; }
  Result<std::unique_ptr<engine::LaneState>> new_state(int64_t) override {
    return std::unique_ptr<engine::LaneState>(std::make_unique<ScriptedState>());
  }
  int64_t state_bytes(int64_t positions, int64_t) const override { return positions * 4; }

  Result<engine::LaneLogits> forward(std::span<const engine::LaneChunk> chunks) override {
    engine::LaneLogits logits;
    logits.vocab = script_.vocab;
    for (const engine::LaneChunk& chunk : chunks) {
      auto& state = static_cast<ScriptedState&>(*chunk.state);
      if (chunk.first_position > state.end())
        return error_at("scripted lane", "chunk", std::to_string(chunk.first_position),
                        "starts past the state");
      state.tokens.resize(static_cast<size_t>(chunk.first_position));
      for (size_t i = 0; i < chunk.tokens.size(); ++i) {
        state.tokens.push_back(chunk.tokens[i]);
        const bool wanted = chunk.all_logits || (chunk.last_logits && i + 1 == chunk.tokens.size());
        if (wanted) add_row(logits, next_token(state.tokens));
      }
    }
    return logits;
  }

 private:
  // The token that follows `sequence`: the script continues from the longest of its prefixes that ends the
  // sequence after the last start token (the prompt may put other text there, e.g. content after a tool
  // result).
  int32_t next_token(const std::vector<int32_t>& sequence) const {
    const auto start =
        std::find_first_of(sequence.rbegin(), sequence.rend(), script_.starts.begin(), script_.starts.end());
    if (start == sequence.rend()) return script_.end;
    const auto after = static_cast<size_t>(start - sequence.rbegin());
    const bool tools = std::find(sequence.begin(), sequence.end(), script_.tool_marker) != sequence.end();
    const bool answered =
        std::find(sequence.begin(), sequence.end(), script_.response_marker) != sequence.end();
    const std::vector<int32_t>& script = tools && !answered ? script_.tool_script : script_.text_script;
    for (size_t written = std::min(after, script.size()); written > 0; --written)
      if (std::equal(script.begin(), script.begin() + static_cast<std::ptrdiff_t>(written),
                     sequence.end() - static_cast<std::ptrdiff_t>(written)))
        return written < script.size() ? script[written] : script_.end;
    return script.empty() ? script_.end : script[0];
  }

  void add_row(engine::LaneLogits& logits, int32_t token) const {
    const size_t row = logits.values.size();
    logits.values.resize(row + static_cast<size_t>(script_.vocab), 0.0f);
    logits.values[row + static_cast<size_t>(token)] = 40.0f;
    ++logits.rows;
  }

  Script script_;
};

}  // namespace

std::unique_ptr<engine::LaneModel> make_scripted_lane(Script script) {
  return std::make_unique<ScriptedLane>(std::move(script));
}

}  // namespace plumb::server::testing
