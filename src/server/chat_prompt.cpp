#include "server/chat_prompt.hpp"

#include <algorithm>

#include "core/json_text.hpp"

namespace plumb::server {

namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 20;

float number_or(const nlohmann::json& config, const char* name, float fallback) {
  auto found = config.find(name);
  return found != config.end() && found->is_number() ? found->get<float>() : fallback;
}

// generation_config.json's sampling fields; do_sample false means greedy.
Status read_defaults(const fs::path& path, SamplingDefaults& defaults) {
  if (!fs::exists(path)) return {};
  auto text = read_text_file(path, kMaxFileBytes);
  if (!text.ok()) return text.error();
  auto config = parse_json_text("server.prompt", "file", path.string(), *text);
  if (!config.ok()) return config.error();
  if (!config->is_object()) return error_at("server.prompt", "file", path.string(), "is not a JSON object");
  const auto sample = config->find("do_sample");
  const bool greedy = sample != config->end() && sample->is_boolean() && !sample->get<bool>();
  defaults.temperature = greedy ? 0.0f : number_or(*config, "temperature", defaults.temperature);
  defaults.top_p = number_or(*config, "top_p", defaults.top_p);
  defaults.min_p = number_or(*config, "min_p", defaults.min_p);
  const auto top_k = config->find("top_k");
  if (top_k != config->end() && top_k->is_number_integer()) defaults.top_k = std::max(0, top_k->get<int>());
  // Values the sampler would refuse fall back to "off" rather than failing every request.
  if (!(defaults.temperature >= 0.0f && defaults.temperature <= 100.0f)) defaults.temperature = 1.0f;
  if (!(defaults.top_p > 0.0f && defaults.top_p <= 1.0f)) defaults.top_p = 1.0f;
  if (!(defaults.min_p >= 0.0f && defaults.min_p <= 1.0f)) defaults.min_p = 0.0f;
  return {};
}

}  // namespace

Result<ChatPrompt> ChatPrompt::load(const fs::path& model_dir) {
  ChatPrompt prompt;
  auto loaded = text::ChatTemplate::load(model_dir);
  if (loaded.ok())
    prompt.template_ = std::move(*loaded);
  else
    prompt.template_problem_ = loaded.error().message;
  PLUMB_TRY(read_defaults(model_dir / "generation_config.json", prompt.defaults_));
  return prompt;
}

Checked<std::string> ChatPrompt::render(const json& messages, const json& tools,
                                        const json& template_kwargs) const {
  if (!template_)
    return invalid_field("messages", "request: model has no usable chat template (" + template_problem_ +
                                         "); use /v1/completions");
  text::ChatRequest request;
  request.messages = messages;
  request.tools = tools;
  request.add_generation_prompt = true;
  if (template_kwargs.is_object()) request.extra = template_kwargs;
  auto text = template_->render(request);
  if (!text.ok()) return invalid_field("messages", text.error().message, "template_error");
  return std::move(*text);
}

}  // namespace plumb::server
