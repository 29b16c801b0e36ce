#pragma once
// A checkpoint's chat template, rendered the way Hugging Face transformers' apply_chat_template renders it:
// the template sees messages, tools (none when absent), documents (none), add_generation_prompt, the
// tokenizer's special tokens (bos_token, eos_token, ...), then any extra variables (enable_thinking, ...).
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "text/template/template.hpp"

namespace plumb::text {

struct ChatRequest {
  // OpenAI-shaped messages: {role, content (string, list of {type: text|image, ...}, or null), tool_calls,
  // ...}.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when the request has no tools
  bool add_generation_prompt = false;
  // Extra template variables (enable_thinking, ...); they may also override a special token.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Reads MODEL_DIR/chat_template.jinja, else chat_template.json, else tokenizer_config.json's chat_template
  // (a string, or a list of {name, template}). `which` picks a named template; empty picks "tool_use" for
  // requests with tools when there is one, else "default". Special tokens come from tokenizer_config.json.
  static Result<ChatTemplate> load(const std::filesystem::path& model_dir, std::string which = "");
  // From template text; `special_tokens` is a JSON object such as {"bos_token": "<bos>", "eos_token":
  // "<eos>"}.
  static Result<ChatTemplate> from_source(
      std::string_view source, std::string name,
      nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object());

  Result<std::string> render(const ChatRequest& request, const jinja::Limits& limits = {}) const;

  // Special tokens as strings, e.g. {"bos_token": "<bos>", "eos_token": "<turn|>"}.
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
  // The template's names when the checkpoint has several ("default", "tool_use", ...).
  std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, jinja::Template>> templates_;
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
  std::string which_;
};

// The special tokens a tokenizer_config.json declares, each as a string (AddedToken objects give their
// content).
nlohmann::ordered_json special_tokens_of(const nlohmann::ordered_json& tokenizer_config);

}  // namespace plumb::text
