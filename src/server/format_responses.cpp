// The Responses API: a "response" object, streamed as typed events from response.created to
// response.completed (or response.incomplete when the reply was cut by max_output_tokens).
#include "server/formats.hpp"

namespace plumb::server {

namespace {

class ResponsesFormat : public ReplyFormat {
 public:
  explicit ResponsesFormat(FormatContext context) : context_(std::move(context)), id_(new_id("resp_")) {}

  std::vector<Event> open() override {
    return {typed("response.created", {{"response", response("in_progress", nullptr)}}),
            typed("response.in_progress", {{"response", response("in_progress", nullptr)}})};
  }

  std::vector<Event> piece(const ReplyText::Piece& piece) override {
    std::vector<Event> events;
    if (!piece.content.empty()) {
      if (message_index_ < 0) open_message(events);
      text_ += piece.content;
      events.push_back(typed("response.output_text.delta", {{"item_id", output_[message_index_]["id"]},
                                                            {"output_index", message_index_},
                                                            {"content_index", 0},
                                                            {"delta", piece.content},
                                                            {"logprobs", json::array()}}));
    }
    for (const ToolCall& call : piece.tool_calls) {
      if (message_index_ >= 0) close_message(events);
      add_call(call, events);
    }
    return events;
  }

  std::vector<Event> close(const engine::Reply& reply) override {
    std::vector<Event> events;
    if (message_index_ >= 0) close_message(events);
    json done = whole(reply);
    const std::string status = done["status"];
    events.push_back(typed(status == "completed" ? "response.completed" : "response.incomplete",
                           {{"response", std::move(done)}}));
    return events;
  }

  json whole(const engine::Reply& reply) override {
    // A message still open (non-streamed use) is closed into the output list.
    if (message_index_ >= 0) {
      std::vector<Event> ignored;
      close_message(ignored);
    }
    const bool cut =
        reply.finish == engine::FinishReason::length || reply.finish == engine::FinishReason::context;
    json usage = {{"input_tokens", reply.prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", reply.cached_tokens}}},
                  {"output_tokens", reply.tokens.size()},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", reply.prompt_tokens + static_cast<int64_t>(reply.tokens.size())}};
    json body = response(cut ? "incomplete" : "completed", std::move(usage));
    if (cut) body["incomplete_details"] = {{"reason", "max_output_tokens"}};
    body["plumb"] = plumb_json(reply);
    return body;
  }

  Event error_event(const ApiError& error) override {
    json data = {{"type", "error"},
                 {"code", error.code.empty() ? json(nullptr) : json(error.code)},
                 {"message", error.message},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"sequence_number", sequence_++}};
    // The nested object lets clients that look for "error" raise it as an API error.
    data["error"] = error_json(error)["error"];
    return Event{"error", std::move(data)};
  }

  bool done_marker() const override { return false; }

 private:
  Event typed(const std::string& type, json fields) {
    json data = {{"type", type}};
    for (auto& [key, value] : fields.items()) data[key] = std::move(value);
    data["sequence_number"] = sequence_++;
    return Event{type, std::move(data)};
  }

  json response(const std::string& status, json usage) const {
    return {{"id", id_},
            {"object", "response"},
            {"created_at", context_.created},
            {"status", status},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"model", context_.model},
            {"output", output_},
            {"parallel_tool_calls", true},
            {"tool_choice", "auto"},
            {"tools", context_.tools.is_null() ? json::array() : context_.tools},
            {"store", false},
            {"text", {{"format", {{"type", "text"}}}}},
            {"usage", std::move(usage)},
            {"metadata", context_.metadata.is_null() ? json::object() : context_.metadata}};
  }

  void open_message(std::vector<Event>& events) {
    message_index_ = static_cast<int>(output_.size());
    text_.clear();
    json item = {{"id", new_id("msg_")},
                 {"type", "message"},
                 {"status", "in_progress"},
                 {"role", "assistant"},
                 {"content", json::array()}};
    output_.push_back(item);
    events.push_back(typed("response.output_item.added", {{"output_index", message_index_}, {"item", item}}));
    events.push_back(typed("response.content_part.added", {{"item_id", item["id"]},
                                                           {"output_index", message_index_},
                                                           {"content_index", 0},
                                                           {"part", text_part("")}}));
  }

  void close_message(std::vector<Event>& events) {
    json& item = output_[message_index_];
    events.push_back(typed("response.output_text.done", {{"item_id", item["id"]},
                                                         {"output_index", message_index_},
                                                         {"content_index", 0},
                                                         {"text", text_},
                                                         {"logprobs", json::array()}}));
    events.push_back(typed("response.content_part.done", {{"item_id", item["id"]},
                                                          {"output_index", message_index_},
                                                          {"content_index", 0},
                                                          {"part", text_part(text_)}}));
    item["status"] = "completed";
    item["content"] = json::array({text_part(text_)});
    events.push_back(typed("response.output_item.done", {{"output_index", message_index_}, {"item", item}}));
    message_index_ = -1;
  }

  void add_call(const ToolCall& call, std::vector<Event>& events) {
    const int index = static_cast<int>(output_.size());
    json item = {{"id", new_id("fc_")},        {"type", "function_call"}, {"status", "in_progress"},
                 {"call_id", new_id("call_")}, {"name", call.name},       {"arguments", ""}};
    events.push_back(typed("response.output_item.added", {{"output_index", index}, {"item", item}}));
    events.push_back(typed("response.function_call_arguments.delta",
                           {{"item_id", item["id"]}, {"output_index", index}, {"delta", call.arguments}}));
    events.push_back(
        typed("response.function_call_arguments.done",
              {{"item_id", item["id"]}, {"output_index", index}, {"arguments", call.arguments}}));
    item["status"] = "completed";
    item["arguments"] = call.arguments;
    output_.push_back(item);
    events.push_back(typed("response.output_item.done", {{"output_index", index}, {"item", item}}));
  }

  static json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
  }

  FormatContext context_;
  std::string id_;
  json output_ = json::array();
  int message_index_ = -1;
  std::string text_;
  int64_t sequence_ = 0;
};

}  // namespace

std::unique_ptr<ReplyFormat> responses_format(FormatContext context) {
  return std::make_unique<ResponsesFormat>(std::move(context));
}

}  // namespace plumb::server
