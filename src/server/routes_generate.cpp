// POST /v1/chat/completions, /v1/completions and /v1/responses: checked requests turned into engine requests,
// answered streamed or whole.
#include <chrono>

#include <fmt/format.h>

#include "server/body.hpp"
#include "server/generation.hpp"
#include "server/requests.hpp"
#include "server/server_state.hpp"

namespace plumb::server {

namespace {

// A checked request, ready for the engine.
struct Prepared {
  GenerationParams params;
  std::vector<int32_t> prompt;
  bool parse_tools = false;
  std::unique_ptr<ReplyFormat> format;
};

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

CheckedStatus check_model(const Server::State& state, const GenerationParams& params) {
  if (params.model && *params.model != state.model.name)
    return unknown_model(*params.model, state.model.name);
  return {};
}

Checked<std::vector<int32_t>> encode(const Server::State& state, const std::string& text, bool add_special) {
  auto ids = state.model.tokenizer.encode(text, add_special);
  if (!ids.ok()) return invalid_field("prompt", ids.error().message);
  if (ids->empty())
    return invalid_field("prompt",
                         "request: prompt is empty after tokenization; expected at least one token, got 0");
  return std::move(*ids);
}

Checked<std::vector<int32_t>> chat_prompt(const Server::State& state, const json& messages, const json& tools,
                                          const json& kwargs) {
  auto text = state.model.prompt.render(messages, tools, kwargs);
  PLUMB_CHECK(text);
  return encode(state, *text, /*add_special=*/false);
}

Checked<Prepared> prepare_chat(const Server::State& state, const json& body) {
  auto request = read_chat_request(body, state.model.prompt.sampling_defaults());
  PLUMB_CHECK(request);
  PLUMB_CHECK(check_model(state, request->params));
  auto prompt = chat_prompt(state, request->messages, request->tools, request->template_kwargs);
  PLUMB_CHECK(prompt);
  Prepared prepared{std::move(request->params), std::move(*prompt)};
  prepared.parse_tools = !request->tools.is_null() && request->tool_choice == ToolChoice::automatic;
  prepared.format = chat_format({state.model.name, unix_seconds(), prepared.params.include_usage});
  return prepared;
}

Checked<Prepared> prepare_completion(const Server::State& state, const json& body) {
  auto request = read_completion_request(body, state.model.prompt.sampling_defaults());
  PLUMB_CHECK(request);
  PLUMB_CHECK(check_model(state, request->params));
  std::vector<int32_t> prompt = std::move(request->prompt_tokens);
  if (request->prompt_text) {
    auto ids = encode(state, *request->prompt_text, /*add_special=*/true);
    PLUMB_CHECK(ids);
    prompt = std::move(*ids);
  }
  Prepared prepared{std::move(request->params), std::move(prompt)};
  prepared.format = completion_format({state.model.name, unix_seconds(), prepared.params.include_usage});
  return prepared;
}

Checked<Prepared> prepare_responses(const Server::State& state, const json& body) {
  auto request = read_responses_request(body, state.model.prompt.sampling_defaults());
  PLUMB_CHECK(request);
  PLUMB_CHECK(check_model(state, request->params));
  auto prompt = chat_prompt(state, request->messages, request->tools, json::object());
  PLUMB_CHECK(prompt);
  Prepared prepared{std::move(request->params), std::move(*prompt)};
  prepared.parse_tools = !request->tools.is_null() && request->tool_choice == ToolChoice::automatic;
  json tools = json::array();
  if (const json* given = body.contains("tools") ? &body["tools"] : nullptr; given && given->is_array())
    tools = *given;
  prepared.format = responses_format(
      {state.model.name, unix_seconds(), false, std::move(request->metadata), std::move(tools)});
  return prepared;
}

// The engine request; the reply may use the rest of the context unless max_tokens says less.
Checked<engine::Request> engine_request(const Server::State& state, Prepared& prepared) {
  const int64_t context = state.model.engine->context();
  const auto prompt_tokens = static_cast<int64_t>(prepared.prompt.size());
  const int64_t asked = prepared.params.max_tokens.value_or(1);
  if (prompt_tokens + asked > context) return context_exceeded(context, prompt_tokens, asked);
  engine::Request request;
  request.prompt = std::move(prepared.prompt);
  request.sampling = prepared.params.sampling;
  request.max_tokens = prepared.params.max_tokens.value_or(context - prompt_tokens);
  request.stop_strings = prepared.params.stop;
  request.draft = prepared.params.draft;
  return request;
}

ApiError refusal_error(const engine::Refusal& refusal) {
  using Kind = engine::Refusal::Kind;
  switch (refusal.kind) {
    case Kind::context_length_exceeded:
      return ApiError{400, "invalid_request_error", "context_length_exceeded", "messages", refusal.message};
    case Kind::over_memory:
      return ApiError{400, "invalid_request_error", "over_memory", "", refusal.message};
    case Kind::queue_full:
      return ApiError{429, "rate_limit_error", "queue_full", "", refusal.message};
    case Kind::shutting_down:
      return unavailable(refusal.message);
    case Kind::invalid_request:
      break;
  }
  return ApiError{400, "invalid_request_error", "invalid_request", "", refusal.message};
}

using Prepare = Checked<Prepared> (*)(const Server::State&, const json&);

void handle(Server::State& state, Prepare prepare, const httplib::Request& req, httplib::Response& res) {
  if (state.draining)
    return send_error(res, unavailable("server: state 'draining' refuses new requests; expected a running "
                                       "server, got one shutting down"));
  auto body = parse_body(req.body);
  if (!body.ok()) return send_error(res, body.error());
  auto prepared = prepare(state, *body);
  if (!prepared.ok()) return send_error(res, prepared.error());
  auto request = engine_request(state, *prepared);
  if (!request.ok()) return send_error(res, request.error());
  const bool stream = prepared->params.stream;
  ReplyText text(state.model.tokenizer, state.end_tokens, prepared->params.stop, prepared->parse_tools);
  auto channel = std::make_shared<ReplyChannel>();
  engine::Admission admission =
      state.model.engine->submit(std::move(*request), ReplyChannel::sink(channel, stream));
  if (!admission.admitted()) return send_error(res, refusal_error(*admission.refusal));
  auto job = std::make_shared<Job>(state, admission.id, std::move(channel), std::move(text),
                                   std::move(prepared->format));
  if (stream) return respond_streamed(res, std::move(job));
  respond_whole(req, res, *job);
}

}  // namespace

void add_generation_routes(Server::State& state) {
  auto route = [&state](Prepare prepare) {
    return [&state, prepare](const httplib::Request& req, httplib::Response& res) {
      handle(state, prepare, req, res);
    };
  };
  state.http.Post("/v1/chat/completions", route(prepare_chat));
  state.http.Post("/v1/completions", route(prepare_completion));
  state.http.Post("/v1/responses", route(prepare_responses));
}

}  // namespace plumb::server
