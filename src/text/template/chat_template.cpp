#include "text/template/chat_template.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace plumb::text {

namespace {

constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{64} << 20;
constexpr const char* kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                              "pad_token", "cls_token", "mask_token"};

Result<std::string> read_file(const std::filesystem::path& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return error_at("chat template", "file", path.string(), "cannot be read: " + error.message());
  if (size > kMaxFileBytes)
    return error_at("chat template", "file", path.string(), "is too large", "at most 64 MiB",
                    std::to_string(size));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return error_at("chat template", "file", path.string(), "cannot be read");
  return text.str();
}

Result<nlohmann::ordered_json> read_json(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto json = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (json.is_discarded()) return error_at("chat template", "file", path.string(), "is not valid JSON");
  if (!json.is_object())
    return error_at("chat template", "file", path.string(), "is not a JSON object", "object",
                    json.type_name());
  return json;
}

std::string token_text(const nlohmann::ordered_json& token) {
  if (token.is_string()) return token.get<std::string>();
  if (token.is_object() && token.contains("content") && token["content"].is_string())
    return token["content"].get<std::string>();
  return {};
}

// The template field of tokenizer_config.json or chat_template.json: a string or a list of named templates.
Result<std::vector<std::pair<std::string, std::string>>> template_sources(const nlohmann::ordered_json& field,
                                                                          const std::string& where) {
  std::vector<std::pair<std::string, std::string>> sources;
  if (field.is_string()) {
    sources.emplace_back("default", field.get<std::string>());
    return sources;
  }
  if (!field.is_array())
    return error_at(where, "field", "chat_template", "has the wrong type",
                    "a string or a list of {name, template}", field.type_name());
  for (const auto& entry : field) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string())
      return error_at(where, "field", "chat_template", "has an entry that is not {name, template}",
                      "{\"name\": string, \"template\": string}", entry.dump());
    sources.emplace_back(entry["name"].get<std::string>(), entry["template"].get<std::string>());
  }
  return sources;
}

// Nesting depth of a JSON value, walked without recursion so hostile input cannot exhaust the stack; stops
// counting past `limit`.
int json_depth(const nlohmann::ordered_json& root, int limit) {
  std::vector<std::pair<const nlohmann::ordered_json*, int>> pending{{&root, 1}};
  int deepest = 0;
  while (!pending.empty() && deepest <= limit) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    if (node->is_structured())
      for (const auto& child : *node) pending.emplace_back(&child, depth + 1);
  }
  return deepest;
}

Status check_depth(const nlohmann::ordered_json& value, const char* field) {
  constexpr int kLimit = 128;
  const int depth = json_depth(value, kLimit);
  if (depth > kLimit)
    return error_at("chat request", "field", field, "is nested too deeply", "at most 128 levels",
                    "more than " + std::to_string(kLimit));
  return {};
}

Status check_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array())
    return error_at("chat request", "field", "messages", "is not a list", "a list of messages",
                    messages.type_name());
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto& message = messages[i];
    const std::string name = "messages[" + std::to_string(i) + "]";
    if (!message.is_object())
      return error_at("chat request", "message", name, "is not an object", "object", message.type_name());
    if (!message.contains("role") || !message["role"].is_string())
      return error_at("chat request", "message", name, "has no string 'role'", "a role such as \"user\"",
                      message.contains("role") ? message["role"].dump() : "nothing");
  }
  return {};
}

}  // namespace

nlohmann::ordered_json special_tokens_of(const nlohmann::ordered_json& tokenizer_config) {
  nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
  if (!tokenizer_config.is_object()) return tokens;
  for (const char* name : kSpecialTokenNames) {
    if (!tokenizer_config.contains(name)) continue;
    const std::string text = token_text(tokenizer_config[name]);
    if (!text.empty()) tokens[name] = text;
  }
  if (tokenizer_config.contains("additional_special_tokens") &&
      tokenizer_config["additional_special_tokens"].is_array()) {
    nlohmann::ordered_json extra = nlohmann::ordered_json::array();
    for (const auto& token : tokenizer_config["additional_special_tokens"])
      extra.push_back(token_text(token));
    tokens["additional_special_tokens"] = extra;
  }
  return tokens;
}

Result<ChatTemplate> ChatTemplate::from_source(std::string_view source, std::string name,
                                               nlohmann::ordered_json special_tokens) {
  auto parsed = jinja::Template::parse(source, name);
  if (!parsed) return parsed.error();
  ChatTemplate chat;
  chat.templates_.emplace_back("default", std::move(*parsed));
  chat.special_tokens_ = std::move(special_tokens);
  return chat;
}

Result<ChatTemplate> ChatTemplate::load(const std::filesystem::path& model_dir, std::string which) {
  if (!std::filesystem::is_directory(model_dir))
    return error_at("chat template", "model directory", model_dir.string(), "does not exist");
  const auto config_path = model_dir / "tokenizer_config.json";
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (std::filesystem::exists(config_path)) {
    auto read = read_json(config_path);
    if (!read) return read.error();
    config = std::move(*read);
  }
  std::vector<std::pair<std::string, std::string>> sources;
  const auto jinja_path = model_dir / "chat_template.jinja";
  const auto processor_path = model_dir / "chat_template.json";
  if (std::filesystem::exists(jinja_path)) {
    auto text = read_file(jinja_path);
    if (!text) return text.error();
    sources.emplace_back("default", std::move(*text));
  } else {
    nlohmann::ordered_json holder = config;
    std::string where = config_path.string();
    if (std::filesystem::exists(processor_path)) {
      auto read = read_json(processor_path);
      if (!read) return read.error();
      holder = std::move(*read);
      where = processor_path.string();
    }
    if (!holder.contains("chat_template"))
      return error_at("chat template", "model directory", model_dir.string(), "has no chat template",
                      "chat_template.jinja, chat_template.json or tokenizer_config.json with chat_template",
                      "none of them");
    auto listed = template_sources(holder["chat_template"], where);
    if (!listed) return listed.error();
    sources = std::move(*listed);
  }
  ChatTemplate chat;
  chat.special_tokens_ = special_tokens_of(config);
  chat.which_ = std::move(which);
  for (auto& [name, source] : sources) {
    if (!chat.which_.empty() && name != chat.which_) continue;
    const std::string label = sources.size() == 1 ? "chat template" : "chat template '" + name + "'";
    auto parsed = jinja::Template::parse(source, label);
    if (!parsed) return parsed.error();
    chat.templates_.emplace_back(name, std::move(*parsed));
  }
  if (chat.templates_.empty()) {
    std::string known;
    for (const auto& source : sources) known += (known.empty() ? "" : ", ") + source.first;
    return error_at("chat template", "template", chat.which_, "is not in the model", known, chat.which_);
  }
  return chat;
}

std::vector<std::string> ChatTemplate::names() const {
  std::vector<std::string> out;
  for (const auto& entry : templates_) out.push_back(entry.first);
  return out;
}

Result<std::string> ChatTemplate::render(const ChatRequest& request, const jinja::Limits& limits) const {
  // Checked before anything copies them: copying JSON recurses once per level.
  PLUMB_TRY(check_depth(request.messages, "messages"));
  PLUMB_TRY(check_depth(request.tools, "tools"));
  PLUMB_TRY(check_depth(request.extra, "extra"));
  PLUMB_TRY(check_messages(request.messages));
  if (!request.tools.is_null() && !request.tools.is_array())
    return error_at("chat request", "field", "tools", "is not a list", "a list of tools",
                    request.tools.type_name());
  if (!request.extra.is_object())
    return error_at("chat request", "field", "extra", "is not an object", "object",
                    request.extra.type_name());
  const jinja::Template* chosen = &templates_.front().second;
  if (templates_.size() > 1) {
    const std::vector<std::string> known = names();
    const bool has_tool_use = std::find(known.begin(), known.end(), "tool_use") != known.end();
    const std::string wanted = !request.tools.is_null() && has_tool_use ? "tool_use" : "default";
    chosen = nullptr;
    for (const auto& [name, parsed] : templates_)
      if (name == wanted) chosen = &parsed;
    if (!chosen) return error_at("chat template", "template", wanted, "is not in the model");
  }
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  variables["messages"] = request.messages;
  variables["tools"] = request.tools;
  variables["documents"] = nullptr;
  variables["add_generation_prompt"] = request.add_generation_prompt;
  for (const auto& [key, value] : special_tokens_.items()) variables[key] = value;
  for (const auto& [key, value] : request.extra.items()) variables[key] = value;
  return chosen->render(variables, limits);
}

}  // namespace plumb::text
