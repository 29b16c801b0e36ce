// Chat completions ("chat.completion" bodies, "chat.completion.chunk" events) and completions
// ("text_completion").
#include "server/formats.hpp"

namespace plumb::server {

namespace {

json tool_call_json(const ToolCall& call, const std::string& id) {
  return {
      {"id", id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

class ChatFormat : public ReplyFormat {
 public:
  explicit ChatFormat(FormatContext context) : context_(std::move(context)), id_(new_id("chatcmpl-")) {}

  std::vector<Event> open() override { return {chunk({{"role", "assistant"}, {"content", ""}}, nullptr)}; }

  std::vector<Event> piece(const ReplyText::Piece& piece) override {
    std::vector<Event> events;
    if (!piece.content.empty()) {
      content_ += piece.content;
      events.push_back(chunk({{"content", piece.content}}, nullptr));
    }
    for (const ToolCall& call : piece.tool_calls) {
      json delta = tool_call_json(call, new_id("call_"));
      delta["index"] = calls_.size();
      calls_.push_back(delta);
      events.push_back(chunk({{"tool_calls", json::array({delta})}}, nullptr));
    }
    return events;
  }

  std::vector<Event> close(const engine::Reply& reply) override {
    Event last = chunk(json::object(), finish_reason(reply, !calls_.empty()));
    last.data["plumb"] = plumb_json(reply);
    std::vector<Event> events{std::move(last)};
    if (context_.include_usage) {
      Event usage = base();
      usage.data["choices"] = json::array();
      usage.data["usage"] = usage_json(reply);
      usage.data["plumb"] = plumb_json(reply);
      events.push_back(std::move(usage));
    }
    return events;
  }

  json whole(const engine::Reply& reply) override {
    json message = {{"role", "assistant"}, {"content", content_}};
    if (!calls_.empty()) {
      json calls = calls_;
      for (json& call : calls) call.erase("index");
      if (content_.empty()) message["content"] = nullptr;
      message["tool_calls"] = std::move(calls);
    }
    message["refusal"] = nullptr;
    json body = {
        {"id", id_}, {"object", "chat.completion"}, {"created", context_.created}, {"model", context_.model}};
    body["choices"] = json::array({{{"index", 0},
                                    {"message", std::move(message)},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason(reply, !calls_.empty())}}});
    body["usage"] = usage_json(reply);
    body["plumb"] = plumb_json(reply);
    return body;
  }

  Event error_event(const ApiError& error) override { return Event{"", error_json(error)}; }

 private:
  Event base() const {
    return Event{"",
                 {{"id", id_},
                  {"object", "chat.completion.chunk"},
                  {"created", context_.created},
                  {"model", context_.model}}};
  }
  Event chunk(json delta, json finish) const {
    Event event = base();
    event.data["choices"] = json::array({{{"index", 0},
                                          {"delta", std::move(delta)},
                                          {"logprobs", nullptr},
                                          {"finish_reason", std::move(finish)}}});
    if (context_.include_usage) event.data["usage"] = nullptr;
    return event;
  }

  FormatContext context_;
  std::string id_;
  std::string content_;
  json calls_ = json::array();
};

// Completions: "text_completion" bodies and events.
class CompletionFormat : public ReplyFormat {
 public:
  explicit CompletionFormat(FormatContext context) : context_(std::move(context)), id_(new_id("cmpl-")) {}

  std::vector<Event> open() override { return {}; }

  std::vector<Event> piece(const ReplyText::Piece& piece) override {
    if (piece.content.empty()) return {};
    text_ += piece.content;
    return {chunk(piece.content, nullptr)};
  }

  std::vector<Event> close(const engine::Reply& reply) override {
    Event last = chunk("", finish_reason(reply, false));
    last.data["plumb"] = plumb_json(reply);
    std::vector<Event> events{std::move(last)};
    if (context_.include_usage) {
      Event usage = base();
      usage.data["choices"] = json::array();
      usage.data["usage"] = usage_json(reply);
      usage.data["plumb"] = plumb_json(reply);
      events.push_back(std::move(usage));
    }
    return events;
  }

  json whole(const engine::Reply& reply) override {
    json body = base().data;
    body["choices"] = json::array({{{"text", text_},
                                    {"index", 0},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason(reply, false)}}});
    body["usage"] = usage_json(reply);
    body["plumb"] = plumb_json(reply);
    return body;
  }

  Event error_event(const ApiError& error) override { return Event{"", error_json(error)}; }

 private:
  Event base() const {
    return Event{"",
                 {{"id", id_},
                  {"object", "text_completion"},
                  {"created", context_.created},
                  {"model", context_.model}}};
  }
  Event chunk(const std::string& text, json finish) const {
    Event event = base();
    event.data["choices"] = json::array(
        {{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", std::move(finish)}}});
    if (context_.include_usage) event.data["usage"] = nullptr;
    return event;
  }

  FormatContext context_;
  std::string id_;
  std::string text_;
};

}  // namespace

std::unique_ptr<ReplyFormat> chat_format(FormatContext context) {
  return std::make_unique<ChatFormat>(std::move(context));
}

std::unique_ptr<ReplyFormat> completion_format(FormatContext context) {
  return std::make_unique<CompletionFormat>(std::move(context));
}

}  // namespace plumb::server
