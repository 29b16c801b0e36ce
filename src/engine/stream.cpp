#include "engine/stream.hpp"

#include <algorithm>

namespace plumb::engine {

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

bool Stream::is_stop_token(int32_t token) const {
  return std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end();
}

Status Stream::commit(int32_t token, Clock::time_point now) {
  PLUMB_ASSERT(!finished, "a finished stream commits no token");
  tokens.push_back(token);
  reply.tokens.push_back(token);
  delta_tokens.push_back(token);
  if (reply.tokens.size() == 1) first_token = now;
  last_commit = now;
  // The stop token ends the reply; its text is not part of it.
  if (is_stop_token(token)) return finish(FinishReason::stop_token);
  auto step = text.push(token);
  if (!step.ok()) return step.error();
  delta_text += step->text;
  reply.text += step->text;
  if (step->stopped) {
    finished = true;
    reply.finish = FinishReason::stop_string;
    return {};
  }
  if (generated() >= request.max_tokens) return finish(FinishReason::length);
  if (static_cast<int64_t>(tokens.size()) >= context) return finish(FinishReason::context);
  return {};
}

Status Stream::finish(FinishReason reason) {
  finished = true;
  reply.finish = reason;
  auto rest = text.finish();
  if (!rest.ok()) return rest.error();
  delta_text += rest->text;
  reply.text += rest->text;
  const bool natural_end = reason != FinishReason::cancelled && reason != FinishReason::error;
  if (rest->stopped && natural_end) reply.finish = FinishReason::stop_string;
  return {};
}

}  // namespace plumb::engine
