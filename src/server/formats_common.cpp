#include <atomic>
#include <random>

#include <fmt/format.h>

#include "server/formats.hpp"

namespace plumb::server {

json usage_json(const engine::Reply& reply) {
  const auto completion = static_cast<int64_t>(reply.tokens.size());
  return {{"prompt_tokens", reply.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", reply.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", reply.cached_tokens}}}};
}

json plumb_json(const engine::Reply& reply) {
  const engine::Timings& t = reply.timings;
  return {{"token_sha", reply.token_sha},
          {"seed", reply.seed},
          {"finish", engine::finish_reason_name(reply.finish)},
          {"cached_tokens", reply.cached_tokens},
          {"drafted_tokens", reply.drafted_tokens},
          {"accepted_tokens", reply.accepted_tokens},
          {"rounds", reply.rounds},
          {"timings",
           {{"queued_seconds", t.queued_seconds},
            {"first_token_seconds", t.first_token_seconds},
            {"prompt_seconds", t.prompt_seconds},
            {"decode_seconds", t.decode_seconds},
            {"total_seconds", t.total_seconds}}}};
}

std::string new_id(const std::string& prefix) {
  // A per-process random salt and a counter: unique here, unlikely to repeat across restarts.
  static const uint64_t salt = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1);
  return fmt::format("{}{:016x}{:08x}", prefix, salt ^ (n * 0xD1B54A32D192ED03ull), n & 0xffffffffu);
}

std::string finish_reason(const engine::Reply& reply, bool has_tool_calls) {
  const std::string reason(engine::openai_finish_reason(reply.finish));
  return has_tool_calls && reason == "stop" ? "tool_calls" : reason;
}

std::string sse_text(const Event& event) {
  std::string text;
  if (!event.event.empty()) text = "event: " + event.event + "\n";
  text += "data: " + event.data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  return text;
}

}  // namespace plumb::server
