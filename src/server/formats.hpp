#pragma once
// The three reply shapes (chat completions, completions, responses), streamed as server-sent events or sent
// whole. A format accumulates the pieces it is given, so a whole reply is built from the same pieces a stream
// sends, in the same way.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "server/api_error.hpp"
#include "server/reply_text.hpp"

namespace plumb::server {

// One server-sent event: `data` is JSON; `event` names the event type where the API uses one (responses).
struct Event {
  std::string event;
  json data;
};

struct FormatContext {
  std::string model;
  int64_t created = 0;  // unix seconds
  bool include_usage = false;
  json metadata;  // responses: echoed
  json tools;     // responses: echoed
};

class ReplyFormat {
 public:
  virtual ~ReplyFormat() = default;
  // Events sent when the stream opens, before any text.
  virtual std::vector<Event> open() = 0;
  // Events for a piece of the reply (also recorded for whole()).
  virtual std::vector<Event> piece(const ReplyText::Piece& piece) = 0;
  // Events after the last piece.
  virtual std::vector<Event> close(const engine::Reply& reply) = 0;
  // The whole reply as one JSON body.
  virtual json whole(const engine::Reply& reply) = 0;
  // An error after the stream opened.
  virtual Event error_event(const ApiError& error) = 0;
  // Chat and completions streams end with "data: [DONE]"; responses streams do not.
  virtual bool done_marker() const { return true; }
};

std::unique_ptr<ReplyFormat> chat_format(FormatContext context);
std::unique_ptr<ReplyFormat> completion_format(FormatContext context);
std::unique_ptr<ReplyFormat> responses_format(FormatContext context);

// usage: prompt, completion and total tokens, with prompt_tokens_details.cached_tokens.
json usage_json(const engine::Reply& reply);
// The `plumb` block: token_sha, seed, drafts, timings.
json plumb_json(const engine::Reply& reply);
// `prefix` ("chatcmpl-", "call_", ...) and 24 hex digits, unique within the process and unlikely across
// processes.
std::string new_id(const std::string& prefix);
// "stop", "length" or "tool_calls".
std::string finish_reason(const engine::Reply& reply, bool has_tool_calls);

// The text of a server-sent event, "event: ...\ndata: ...\n\n".
std::string sse_text(const Event& event);

}  // namespace plumb::server
