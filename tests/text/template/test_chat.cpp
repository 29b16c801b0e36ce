// The chat-template API: where templates and special tokens come from, which named template is used, the
// variables a template sees, and refusals of malformed requests and model directories.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "text/template/chat_template.hpp"

namespace plumb::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// A fresh model directory under the build tree holding the given files.
fs::path model_dir(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path dir = fs::path(PLUMB_BINARY_DIR) / "test_chat_models" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [file, text] : files) std::ofstream(dir / file, std::ios::binary) << text;
  return dir;
}

ChatRequest user_says(const std::string& text) {
  ChatRequest request;
  request.messages.push_back({{"role", "user"}, {"content", text}});
  return request;
}

std::string render_or_error(const Result<ChatTemplate>& chat, const ChatRequest& request) {
  if (!chat) return "load error: " + chat.error().message;
  auto rendered = chat->render(request);
  return rendered ? *rendered : "render error: " + rendered.error().message;
}

constexpr const char* kEcho =
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
    "{% if add_generation_prompt %}<go>{% endif %}{{ eos_token }}";

TEST(ChatTemplate, ReadsChatTemplateJinjaAndSpecialTokens) {
  const json config = {{"bos_token", "<s>"},
                       {"eos_token", {{"content", "</s>"}, {"lstrip", false}}},
                       {"chat_template", "ignored because chat_template.jinja is present"}};
  auto chat = ChatTemplate::load(
      model_dir("jinja", {{"chat_template.jinja", kEcho}, {"tokenizer_config.json", config.dump()}}));
  ChatRequest request = user_says("hi");
  request.add_generation_prompt = true;
  EXPECT_EQ(render_or_error(chat, request), "<s>[user:hi]<go></s>");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->special_tokens().dump(), R"({"bos_token":"<s>","eos_token":"</s>"})");
}

TEST(ChatTemplate, ReadsTokenizerConfigStringAndNamedTemplates) {
  const json single = {{"eos_token", "<e>"}, {"chat_template", kEcho}};
  EXPECT_EQ(
      render_or_error(ChatTemplate::load(model_dir("config", {{"tokenizer_config.json", single.dump()}})),
                      user_says("x")),
      "[user:x]<e>");
  const json named = {
      {"chat_template", json::array({{{"name", "default"}, {"template", "default:{{ tools }}"}},
                                     {{"name", "tool_use"}, {"template", "tool_use:{{ tools | length }}"}},
                                     {{"name", "rag"}, {"template", "rag"}}})}};
  const fs::path dir = model_dir("named", {{"tokenizer_config.json", named.dump()}});
  ChatRequest with_tools = user_says("x");
  with_tools.tools = json::array({{{"type", "function"}}});
  EXPECT_EQ(render_or_error(ChatTemplate::load(dir), user_says("x")), "default:None");
  EXPECT_EQ(render_or_error(ChatTemplate::load(dir), with_tools), "tool_use:1");
  EXPECT_EQ(render_or_error(ChatTemplate::load(dir, "rag"), with_tools), "rag");
  auto missing = ChatTemplate::load(dir, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("expected default, tool_use, rag"), std::string::npos)
      << missing.error().message;
}

TEST(ChatTemplate, ReadsProcessorChatTemplateJson) {
  const json processor = {{"chat_template", "processor:{{ messages | length }}"}};
  EXPECT_EQ(
      render_or_error(ChatTemplate::load(model_dir("processor", {{"chat_template.json", processor.dump()}})),
                      user_says("x")),
      "processor:1");
}

TEST(ChatTemplate, TemplateSeesTransformersVariables) {
  auto chat = ChatTemplate::from_source(
      "{{ tools is defined }}{{ tools is none }}{{ documents is none }}{{ add_generation_prompt }}"
      "{{ enable_thinking }}{{ bos_token }}",
      "t.jinja", {{"bos_token", "<bos>"}});
  ChatRequest request = user_says("x");
  request.extra = {{"enable_thinking", false}, {"bos_token", "<override>"}};
  EXPECT_EQ(render_or_error(chat, request), "TrueTrueTrueFalseFalse<override>");
}

TEST(ChatTemplate, RealGemma4TemplateRendersAConversation) {
  auto chat = ChatTemplate::load(fs::path(PLUMB_SOURCE_DIR) / "tests/fixtures/templates/gemma4");
  ChatRequest request;
  request.messages =
      json::array({{{"role", "system"}, {"content", " Be brief. "}},
                   {{"role", "user"},
                    {"content", json::array({{{"type", "image"}}, {{"type", "text"}, {"text", "What?"}}})}}});
  request.add_generation_prompt = true;
  request.extra = {{"enable_thinking", true}};
  EXPECT_EQ(
      render_or_error(chat, request),
      "<bos><|turn>system\n<|think|>\nBe brief.<turn|>\n<|turn>user\n<|image|>What?<turn|>\n<|turn>model\n");
}

TEST(ChatTemplate, RefusesMalformedRequests) {
  auto chat = ChatTemplate::from_source(kEcho, "t.jinja");
  ASSERT_TRUE(chat.ok());
  const std::vector<std::pair<json, std::string>> bad_messages = {
      {json::object(), "field 'messages' is not a list"},
      {json::array({"hello"}), "message 'messages[0]' is not an object"},
      {json::array({{{"content", "no role"}}}), "message 'messages[0]' has no string 'role'"},
      {json::array({{{"role", 5}}}), "message 'messages[0]' has no string 'role'"},
  };
  for (const auto& [messages, problem] : bad_messages) {
    ChatRequest request;
    request.messages = messages;
    auto rendered = chat->render(request);
    ASSERT_FALSE(rendered.ok()) << messages.dump();
    EXPECT_NE(rendered.error().message.find(problem), std::string::npos) << rendered.error().message;
  }
  ChatRequest bad_tools = user_says("x");
  bad_tools.tools = "not a list";
  auto rendered = chat->render(bad_tools);
  ASSERT_FALSE(rendered.ok());
  EXPECT_NE(rendered.error().message.find("field 'tools' is not a list"), std::string::npos);
}

TEST(ChatTemplate, RefusesDeeplyNestedRequestsBeforeCopyingThem) {
  auto chat = ChatTemplate::from_source(kEcho, "t.jinja");
  ASSERT_TRUE(chat.ok());
  json deep = "leaf";
  for (int i = 0; i < 100000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  ChatRequest request = user_says("x");
  request.messages[0]["content"] = std::move(deep);
  auto rendered = chat->render(request);
  ASSERT_FALSE(rendered.ok());
  EXPECT_NE(rendered.error().message.find("field 'messages' is nested too deeply"), std::string::npos)
      << rendered.error().message;
}

TEST(ChatTemplate, RefusesBrokenModelDirectories) {
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {fs::path(PLUMB_BINARY_DIR) / "no_such_model_dir", "does not exist"},
      {model_dir("empty", {}), "has no chat template"},
      {model_dir("bad_json", {{"tokenizer_config.json", "{not json"}}), "is not valid JSON"},
      {model_dir("not_object", {{"tokenizer_config.json", "[1]"}}), "is not a JSON object"},
      {model_dir("wrong_type", {{"tokenizer_config.json", R"({"chat_template": 5})"}}),
       "field 'chat_template' has the wrong type"},
      {model_dir("bad_entry", {{"tokenizer_config.json", R"({"chat_template": [{"name": "x"}]})"}}),
       "has an entry that is not {name, template}"},
      {model_dir("bad_template", {{"chat_template.jinja", "ok\n{% if %}"}}),
       "chat template line 2: expected"},
  };
  for (const auto& [dir, problem] : cases) {
    auto chat = ChatTemplate::load(dir);
    ASSERT_FALSE(chat.ok()) << dir;
    EXPECT_NE(chat.error().message.find(problem), std::string::npos)
        << dir << ": expected '" << problem << "' in '" << chat.error().message << "'";
  }
}

TEST(ChatTemplate, RenderingIsRepeatableAndIndependent) {
  auto chat = ChatTemplate::from_source(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
      "t");
  ChatRequest request = user_says("a");
  EXPECT_EQ(render_or_error(chat, request), "1");
  EXPECT_EQ(render_or_error(chat, request), "1");
}

}  // namespace
}  // namespace plumb::text
