// GET /v1/models, /v1/models/{id}, /health, /metrics; POST /tokenize, /detokenize.
#include <chrono>

#include "server/body.hpp"
#include "server/json_fields.hpp"
#include "server/messages.hpp"
#include "server/server_state.hpp"

namespace plumb::server {

namespace {

json model_json(const Server::State& state, int64_t created) {
  return {{"id", state.model.name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "plumb"},
          {"max_model_len", state.model.engine->context()}};
}

CheckedStatus check_model(const Server::State& state, const json& body) {
  auto model = optional_string(body, "model");
  PLUMB_CHECK(model);
  if (model->has_value() && **model != state.model.name) return unknown_model(**model, state.model.name);
  return {};
}

// {"prompt": text, "add_special_tokens": bool} or {"messages": [...], "tools": [...]} (rendered by the chat
// template with the generation prompt).
Checked<json> tokenize(const Server::State& state, const json& body) {
  PLUMB_CHECK(check_model(state, body));
  std::vector<int32_t> ids;
  if (field(body, "messages")) {
    auto messages = read_chat_messages(body["messages"]);
    PLUMB_CHECK(messages);
    auto tools = read_chat_tools(body);
    PLUMB_CHECK(tools);
    auto text = state.model.prompt.render(*messages, *tools, json::object());
    PLUMB_CHECK(text);
    auto encoded = state.model.tokenizer.encode(*text, false);
    if (!encoded.ok()) return invalid_field("messages", encoded.error().message);
    ids = std::move(*encoded);
  } else {
    auto prompt = optional_string(body, "prompt");
    PLUMB_CHECK(prompt);
    if (!prompt->has_value()) return missing_field("prompt");
    auto add_special = optional_bool(body, "add_special_tokens");
    PLUMB_CHECK(add_special);
    auto encoded = state.model.tokenizer.encode(**prompt, add_special->value_or(true));
    if (!encoded.ok()) return invalid_field("prompt", encoded.error().message);
    ids = std::move(*encoded);
  }
  return json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", state.model.engine->context()}};
}

Checked<json> detokenize(const Server::State& state, const json& body) {
  PLUMB_CHECK(check_model(state, body));
  const json* tokens = field(body, "tokens");
  if (!tokens) return missing_field("tokens");
  auto ids = read_token_ids(*tokens, "tokens");
  PLUMB_CHECK(ids);
  const auto vocab = static_cast<int64_t>(state.model.tokenizer.vocab_size());
  for (size_t i = 0; i < ids->size(); ++i)
    if ((*ids)[i] >= vocab)
      return out_of_range("tokens[" + std::to_string(i) + "]", "0 <= id < " + std::to_string(vocab),
                          (*ids)[i]);
  auto text = state.model.tokenizer.decode(*ids);
  if (!text.ok()) return invalid_field("tokens", text.error().message);
  return json{{"prompt", *text}};
}

using Route = Checked<json> (*)(const Server::State&, const json&);

void post_json(Server::State& state, const char* path, Route route) {
  state.http.Post(path, [&state, route](const httplib::Request& req, httplib::Response& res) {
    auto body = parse_body(req.body);
    if (!body.ok()) return send_error(res, body.error());
    auto reply = route(state, *body);
    if (!reply.ok()) return send_error(res, reply.error());
    send_json(res, *reply);
  });
}

}  // namespace

void add_info_routes(Server::State& state) {
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  state.http.Get("/v1/models", [&state, created](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"object", "list"}, {"data", json::array({model_json(state, created)})}});
  });
  state.http.Get("/v1/models/(.+)", [&state, created](const httplib::Request& req, httplib::Response& res) {
    const std::string requested = req.matches[1];
    if (requested != state.model.name) return send_error(res, unknown_model(requested, state.model.name));
    send_json(res, model_json(state, created));
  });
  state.http.Get("/health", [&state](const httplib::Request&, httplib::Response& res) {
    if (state.draining) {
      res.status = 503;
      res.set_content(R"({"status":"draining"})", "application/json");
      return;
    }
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  state.http.Get("/metrics", [&state](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        state.metrics.prometheus(state.model.engine->metrics(), state.in_flight, process_memory()),
        "text/plain; version=0.0.4; charset=utf-8");
  });
  post_json(state, "/tokenize", tokenize);
  post_json(state, "/detokenize", detokenize);
}

}  // namespace plumb::server
