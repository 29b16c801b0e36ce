// Request bodies and fields: every malformed input is a 400 (or 404) naming the field, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/auth.hpp"
#include "server/body.hpp"
#include "server/chat_prompt.hpp"
#include "server/messages.hpp"
#include "server/requests.hpp"

namespace plumb::server {
namespace {

const SamplingDefaults kDefaults{1.0f, 64, 0.95f, 0.0f};

json chat(json extra) {
  json body = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

void expect_error(const Checked<ChatRequest>& got, int status, const std::string& param,
                  const std::string& code) {
  ASSERT_FALSE(got.ok()) << "expected an error on '" << param << "'";
  EXPECT_EQ(got.error().status, status) << got.error().message;
  EXPECT_EQ(got.error().param, param) << got.error().message;
  EXPECT_EQ(got.error().code, code) << got.error().message;
}

TEST(Body, InvalidUtf8IsNamedWithItsOffset) {
  auto parsed = parse_body(std::string("{\"a\": \"x\xC3(\"}"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, "invalid_utf8");
  EXPECT_NE(parsed.error().message.find("offset 8"), std::string::npos) << parsed.error().message;
  EXPECT_EQ(invalid_utf8_offset("ok \xE2\x82\xAC"), std::nullopt);
  EXPECT_EQ(invalid_utf8_offset("\xED\xA0\x80"), 0u);  // a UTF-16 surrogate is not UTF-8
}

TEST(Body, SyntaxErrorsDeepNestingAndNonObjectsAreRefused) {
  auto broken = parse_body("{\"a\": 1,");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().code, "invalid_json");
  EXPECT_NE(broken.error().message.find("byte"), std::string::npos);
  auto deep = parse_body(std::string(100000, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("nests too deeply"), std::string::npos) << deep.error().message;
  auto list = parse_body("[1, 2]");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().param, "body");
  EXPECT_TRUE(parse_body(R"({"s": "[[[[{{{{"})").ok());  // brackets inside strings do not nest
}

TEST(Requests, DefaultsComeFromTheCheckpointAndFieldsOverrideThem) {
  auto plain = read_chat_request(chat({}), kDefaults);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->params.sampling.temperature, 1.0f);
  EXPECT_EQ(plain->params.sampling.top_k, 64);
  EXPECT_FALSE(plain->params.max_tokens.has_value());
  EXPECT_TRUE(plain->params.draft);
  auto given = read_chat_request(chat({{"temperature", 0},
                                       {"top_k", -1},
                                       {"top_p", 0.5},
                                       {"min_p", 0.1},
                                       {"seed", -3},
                                       {"max_tokens", 7},
                                       {"max_completion_tokens", 9},
                                       {"stop", "x"},
                                       {"stream", true},
                                       {"stream_options", {{"include_usage", true}}},
                                       {"draft", false}}),
                                 kDefaults);
  ASSERT_TRUE(given.ok()) << given.error().message;
  const GenerationParams& p = given->params;
  EXPECT_EQ(p.sampling.temperature, 0.0f);
  EXPECT_EQ(p.sampling.top_k, 0);
  EXPECT_EQ(p.sampling.top_p, 0.5f);
  EXPECT_EQ(*p.sampling.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(*p.max_tokens, 9);  // max_completion_tokens wins over the older max_tokens
  EXPECT_EQ(p.stop, std::vector<std::string>{"x"});
  EXPECT_TRUE(p.stream && p.include_usage);
  EXPECT_FALSE(p.draft);
}

TEST(Requests, WrongTypesAndRangesNameTheField) {
  expect_error(read_chat_request(chat({{"temperature", "hot"}}), kDefaults), 400, "temperature",
               "invalid_type");
  expect_error(read_chat_request(chat({{"temperature", 3}}), kDefaults), 400, "temperature", "invalid_value");
  expect_error(read_chat_request(chat({{"top_p", 0}}), kDefaults), 400, "top_p", "invalid_value");
  expect_error(read_chat_request(chat({{"max_tokens", 0}}), kDefaults), 400, "max_tokens", "invalid_value");
  expect_error(read_chat_request(chat({{"max_tokens", 1.5}}), kDefaults), 400, "max_tokens", "invalid_type");
  expect_error(read_chat_request(chat({{"seed", "1"}}), kDefaults), 400, "seed", "invalid_type");
  expect_error(read_chat_request(chat({{"stop", json::array({1})}}), kDefaults), 400, "stop", "invalid_type");
  expect_error(read_chat_request(chat({{"stream", "yes"}}), kDefaults), 400, "stream", "invalid_type");
  expect_error(read_chat_request(chat({{"n", 2}}), kDefaults), 400, "n", "invalid_value");
  expect_error(read_chat_request(chat({{"logprobs", true}}), kDefaults), 400, "logprobs",
               "unsupported_parameter");
  expect_error(read_chat_request(chat({{"model", 5}}), kDefaults), 400, "model", "invalid_type");
  expect_error(read_chat_request(chat({{"tool_choice", "required"}}), kDefaults), 400, "tool_choice",
               "unsupported_parameter");
  auto message = read_chat_request(chat({{"temperature", 3}}), kDefaults).error().message;
  EXPECT_EQ(message, "request: field 'temperature' is out of range; expected 0 <= temperature <= 2, got 3");
}

TEST(Requests, MessagesAreChecked) {
  expect_error(read_chat_request({{"model", "m"}}, kDefaults), 400, "messages", "missing_required_parameter");
  expect_error(read_chat_request({{"messages", json::array()}}, kDefaults), 400, "messages", "invalid_value");
  expect_error(read_chat_request({{"messages", "hi"}}, kDefaults), 400, "messages", "invalid_type");
  expect_error(
      read_chat_request({{"messages", json::array({{{"role", "wizard"}, {"content", "x"}}})}}, kDefaults),
      400, "messages[0].role", "invalid_value");
  expect_error(read_chat_request({{"messages", json::array({{{"content", "x"}}})}}, kDefaults), 400,
               "messages[0].role", "missing_required_parameter");
  expect_error(
      read_chat_request({{"messages", json::array({{{"role", "user"}, {"content", 5}}})}}, kDefaults), 400,
      "messages[0].content", "invalid_type");
  json image = {{"role", "user"}, {"content", json::array({{{"type", "image_url"}, {"image_url", "x"}}})}};
  expect_error(read_chat_request({{"messages", json::array({image})}}, kDefaults), 400,
               "messages[0].content[0].type", "unsupported_content");
}

TEST(Requests, ToolCallArgumentsBecomeObjectsForTheTemplate) {
  json call = {
      {"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", R"({"x": 1})"}}}};
  json messages =
      json::array({{{"role", "user"}, {"content", "q"}},
                   {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}},
                   {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "42"}}});
  auto shaped = read_chat_messages(messages);
  ASSERT_TRUE(shaped.ok()) << shaped.error().message;
  EXPECT_EQ((*shaped)[1]["tool_calls"][0]["function"]["arguments"], json({{"x", 1}}));
}

TEST(Requests, ResponsesInputBecomesChatMessages) {
  json input =
      json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "q"}}})}},
                   {{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}},
                   {{"type", "function_call_output"}, {"call_id", "c"}, {"output", "ok"}}});
  auto request = read_responses_request(
      {{"input", input}, {"instructions", "be brief"}, {"max_output_tokens", 5}}, kDefaults);
  ASSERT_TRUE(request.ok()) << request.error().message;
  const json& messages = request->messages;
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0], json({{"role", "system"}, {"content", "be brief"}}));
  EXPECT_EQ(messages[1]["content"], "q");
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(messages[3]["role"], "tool");
  EXPECT_EQ(*request->params.max_tokens, 5);
  auto unknown = read_responses_request({{"input", json::array({{{"type", "web_search_call"}}})}}, kDefaults);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().param, "input[0].type");
}

// A body as a client sends it: every object's keys out of alphabetical order, the way Python clients keep
// them (a tool, its function, its JSON schema, its properties, and tool-call arguments).
constexpr const char* kToolsBody = R"({"model": "m",
  "messages": [{"role": "user", "content": "q"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"zone\": \"CET\", \"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
    "parameters": {"type": "object", "required": ["city"], "properties": {
      "zone": {"type": "string", "description": "time zone"}, "city": {"type": "string"}}}}}]})";

constexpr const char* kToolsJson =
    R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather now", )"
    R"("parameters": {"type": "object", "required": ["city"], "properties": {)"
    R"("zone": {"type": "string", "description": "time zone"}, "city": {"type": "string"}}}}}])";

// The served checkpoint's prompt with a template that prints what it was given as JSON.
ChatPrompt tojson_prompt() {
  const std::filesystem::path dir = std::filesystem::path(PLUMB_BINARY_DIR) / "test_server_models" / "tojson";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "chat_template.jinja", std::ios::binary)
      << "{{ tools | tojson }}\n{{ messages[1].tool_calls[0].function.arguments | tojson }}";
  auto prompt = ChatPrompt::load(dir);
  PLUMB_ASSERT(prompt.ok() && prompt->has_template(), "the tojson template loads");
  return std::move(*prompt);
}

std::string rendered_tools(const ChatPrompt& prompt, const json& body) {
  auto request = read_chat_request(body, kDefaults);
  if (!request.ok()) return "request error: " + request.error().message;
  auto text = prompt.render(request->messages, request->tools, request->template_kwargs);
  return text.ok() ? *text : "render error: " + text.error().message;
}

TEST(Requests, ToolSchemasReachTheTemplateInTheClientsKeyOrder) {
  const ChatPrompt prompt = tojson_prompt();
  auto body = parse_body(kToolsBody);
  ASSERT_TRUE(body.ok()) << body.error().message;
  const std::string expected = std::string(kToolsJson) + "\n" + R"({"zone": "CET", "city": "Paris"})";
  EXPECT_EQ(rendered_tools(prompt, *body), expected);
  // The same body with its keys sorted renders differently, so key order is what this test sees.
  const json sorted = json::parse(nlohmann::json::parse(kToolsBody).dump());
  EXPECT_NE(rendered_tools(prompt, sorted), expected);
}

TEST(Requests, ResponsesToolSchemasKeepTheClientsKeyOrder) {
  auto body = parse_body(R"({"input": "q", "tools": [{"type": "function", "name": "get_weather",
      "parameters": {"type": "object", "required": ["city"], "properties": {
        "zone": {"type": "string", "description": "time zone"}, "city": {"type": "string"}}},
      "description": "Weather now"}]})");
  ASSERT_TRUE(body.ok()) << body.error().message;
  auto request = read_responses_request(*body, kDefaults);
  ASSERT_TRUE(request.ok()) << request.error().message;
  // Responses tools take the chat shape (name, description, parameters); the schema inside is the client's.
  EXPECT_EQ(request->tools.dump(), json::parse(kToolsJson).dump());
}

TEST(Requests, CompletionPromptIsTextOrTokenIds) {
  auto text = read_completion_request({{"prompt", "abc"}}, kDefaults);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text->prompt_text, "abc");
  auto ids = read_completion_request({{"prompt", json::array({json::array({2, 3})})}}, kDefaults);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->prompt_tokens, (std::vector<int32_t>{2, 3}));
  for (json bad :
       {json::array({-1}), json::array({1.5}), json::array({4294967296ll}), json::array(), json(5)}) {
    auto refused = read_completion_request({{"prompt", bad}}, kDefaults);
    EXPECT_FALSE(refused.ok()) << bad.dump();
  }
}

TEST(Auth, BearerKeysAreAcceptedAndEverythingElseRefused) {
  ApiKeys keys({"k1", "second key"});
  EXPECT_TRUE(keys.required());
  EXPECT_TRUE(keys.accepts("Bearer k1"));
  EXPECT_TRUE(keys.accepts("Bearer second key"));
  EXPECT_TRUE(keys.accepts("bearer k1"));  // the scheme is case-insensitive, the key is not
  for (const char* header :
       {"", "k1", "Bearer", "Bearer ", "Bearer k", "Bearer k1 ", "Bearer K1", "Basic k1"})
    EXPECT_FALSE(keys.accepts(header)) << "header '" << header << "'";
  EXPECT_TRUE(ApiKeys({}).accepts(""));
}

}  // namespace
}  // namespace plumb::server
