// A round: plan each live stream's window (a prompt chunk, or the pending row and its drafts), run every
// window in one forward, then per stream draw keyed tokens, accept the drafts equal to the draws, commit and
// roll the state back to the committed tokens.
#include <algorithm>

#include <fmt/format.h>

#include "engine/engine_impl.hpp"

namespace plumb::engine {

namespace {

// With the adaptive depth at zero, a stream still proposes one draft this often, to keep measuring.
constexpr int64_t kProbeEveryRounds = 16;

}  // namespace

void Engine::Impl::propose_drafts(Stream& stream, int64_t streams, int64_t room) {
  stream.window_drafts = 0;
  if (!stream.drafter) return;
  const int64_t positions_left = stream.context - 1 - stream.window_first;
  const int64_t tokens_left = stream.request.max_tokens - stream.generated() - 1;
  const auto most =
      static_cast<int>(std::min<int64_t>({options.max_draft_depth, room, positions_left, tokens_left}));
  if (most <= 0) return;
  int depth = options.fixed_draft_depth >= 0 ? std::min(options.fixed_draft_depth, most)
                                             : choose_depth(stream.acceptance.rate(), cost, streams, most);
  if (depth == 0 && ++stream.idle_drafts >= kProbeEveryRounds) depth = 1;
  if (depth == 0) return;
  std::vector<int32_t> drafts;
  stream.drafter->propose(stream.tokens, depth, drafts);
  // A drafter's ids are not trusted: the drafts stop at the first one outside the vocabulary.
  const auto bad =
      std::find_if(drafts.begin(), drafts.end(), [&](int32_t id) { return id < 0 || id >= model->vocab(); });
  drafts.erase(bad, drafts.end());
  if (static_cast<int>(drafts.size()) > depth) drafts.resize(static_cast<size_t>(depth));
  if (drafts.empty()) return;
  stream.idle_drafts = 0;
  stream.window.insert(stream.window.end(), drafts.begin(), drafts.end());
  stream.window_drafts = static_cast<int64_t>(drafts.size());
}

void Engine::Impl::plan_round(std::vector<Stream*>& planned) {
  std::vector<Stream*> order;
  for (size_t i = 0; i < live.size(); ++i) {
    Stream* stream = live[(round_start + i) % live.size()].get();
    if (!stream->finished) order.push_back(stream);
  }
  round_start = live.empty() ? 0 : (round_start + 1) % live.size();
  int64_t rows_left = options.max_round_rows;
  // Every decoding stream's pending row first: one row each keeps every reply moving.
  for (Stream* stream : order) {
    if (stream->prefilling() || rows_left == 0) continue;
    stream->window_first = static_cast<int64_t>(stream->tokens.size()) - 1;
    stream->window.assign(1, stream->tokens.back());
    stream->window_drafts = 0;
    stream->window_is_prompt = false;
    planned.push_back(stream);
    --rows_left;
  }
  const size_t decoding = planned.size();
  for (Stream* stream : order) {
    if (!stream->prefilling() || rows_left == 0) continue;
    const int64_t first = stream->state->end();
    const int64_t rows = std::min({stream->prompt_length - first, options.prompt_chunk_rows, rows_left});
    stream->window_first = first;
    stream->window.assign(stream->tokens.begin() + first, stream->tokens.begin() + first + rows);
    stream->window_drafts = 0;
    stream->window_is_prompt = true;
    planned.push_back(stream);
    rows_left -= rows;
  }
  // Drafts take what rows are left.
  for (size_t i = 0; i < decoding && rows_left > 0; ++i) {
    propose_drafts(*planned[i], static_cast<int64_t>(planned.size()), rows_left);
    rows_left -= planned[i]->window_drafts;
  }
}

Status Engine::Impl::verify(Stream& stream, const LaneLogits& logits, int64_t first_logit,
                            Clock::time_point now) {
  ++stream.reply.rounds;
  const auto rows = static_cast<int64_t>(stream.window.size());
  if (stream.window_is_prompt) {
    stream.round_prompt_rows += rows;
    if (stream.window_first + rows < stream.prompt_length) return {};
    if (stream.request.use_prompt_cache && cache.budget_bytes() > 0 && !model->path_invariant()) {
      auto snapshot = stream.state->clone();
      if (!snapshot.ok()) return snapshot.error();
      stream.prompt_snapshot = std::move(*snapshot);
    }
  }
  // A prompt's last chunk returns its last row only; a window returns every row.
  const int64_t drawn_rows = stream.window_is_prompt ? 1 : rows;
  const int64_t base_position = stream.window_first + (stream.window_is_prompt ? rows - 1 : 0);
  const bool had_tokens = !stream.reply.tokens.empty();
  const Clock::time_point previous_commit = stream.last_commit;
  int64_t accepted = 0;
  for (int64_t i = 0; i < drawn_rows; ++i) {
    const int64_t position = base_position + i + 1;
    const int32_t draw = logits.draws.empty() ? sample_keyed(logits.row(first_logit + i),
                                                             stream.request.sampling, stream.seed, position)
                                              : logits.draws[static_cast<size_t>(first_logit + i)];
    if (draw < 0 || draw >= model->vocab())
      return error_at("engine.round", "draw at position", std::to_string(position), "is not a token",
                      fmt::format("0 <= id < {}", model->vocab()), std::to_string(draw));
    PLUMB_TRY(stream.commit(draw, now));
    if (stream.finished || i + 1 >= drawn_rows || draw != stream.window[static_cast<size_t>(i + 1)]) break;
    ++accepted;
  }
  if (stream.window_drafts > 0) {
    stream.acceptance.observe(static_cast<int>(stream.window_drafts), static_cast<int>(accepted));
    stream.drafter->accepted(static_cast<int>(stream.window_drafts), static_cast<int>(accepted));
    stream.reply.drafted_tokens += stream.window_drafts;
    stream.reply.accepted_tokens += accepted;
    stream.round_drafted += stream.window_drafts;
    stream.round_accepted += accepted;
  }
  if (had_tokens) {
    const auto committed = static_cast<int64_t>(stream.delta_tokens.size());
    stream.token_interval =
        seconds_between(previous_commit, now) / static_cast<double>(std::max<int64_t>(committed, 1));
  }
  // The state keeps the committed tokens' rows; the newest token is the next pending row.
  const int64_t kept = static_cast<int64_t>(stream.tokens.size()) - 1;
  if (stream.state->end() > kept) PLUMB_TRY(stream.state->roll_back(kept));
  return {};
}

Status Engine::Impl::run_round() {
  std::vector<Stream*> planned;
  plan_round(planned);
  if (planned.empty()) return {};
  std::vector<LaneChunk> chunks;
  int64_t rows = 0;
  std::vector<int64_t> first_logits;  // each stream's first logits row
  int64_t logit_rows = 0;
  for (Stream* stream : planned) {
    const bool prompt = stream->window_is_prompt;
    const auto window = static_cast<int64_t>(stream->window.size());
    const bool prompt_end = stream->window_first + window == stream->prompt_length;
    chunks.push_back({stream->state.get(), stream->window, stream->window_first, !prompt,
                      prompt && prompt_end, draw_params(stream->request.sampling, stream->seed, 0)});
    first_logits.push_back(logit_rows);
    logit_rows += prompt ? (prompt_end ? 1 : 0) : window;
    rows += window;
  }
  const Clock::time_point start = Clock::now();
  auto logits = model->forward(chunks);
  const Clock::time_point now = Clock::now();
  ++round_totals.rounds;
  round_totals.rows += static_cast<uint64_t>(rows);
  if (!logits.ok()) {
    for (Stream* stream : planned) {
      stream->reply.error = logits.error().message;
      (void)stream->finish(FinishReason::error);
    }
    return logits.error();
  }
  cost.observe(rows, seconds_between(start, now));
  for (size_t i = 0; i < planned.size(); ++i) {
    const Status verified = verify(*planned[i], *logits, first_logits[i], now);
    if (!verified.ok()) {
      planned[i]->reply.error = verified.error().message;
      (void)planned[i]->finish(FinishReason::error);
    }
  }
  return {};
}

}  // namespace plumb::engine
