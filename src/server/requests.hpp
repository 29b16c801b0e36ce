#pragma once
// The fields of the generation routes, read and checked before anything runs. Sampling fields left out take
// the checkpoint's generation_config.json defaults, as the checkpoint's authors meant it to be run.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampling.hpp"
#include "server/api_error.hpp"

namespace plumb::server {

// Sampling defaults of the served checkpoint (generation_config.json), or OpenAI's when it has none.
struct SamplingDefaults {
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
};

struct GenerationParams {
  std::optional<std::string> model;
  std::optional<int64_t> max_tokens;  // absent: up to the context
  engine::SamplingOptions sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  bool draft = true;
};

// What a tool_choice allows: parse the model's calls (auto) or not (none).
enum class ToolChoice : uint8_t { automatic, none };

struct ChatRequest {
  GenerationParams params;
  json messages;  // as the template sees them (tool-call arguments as objects)
  json tools;     // null when absent
  ToolChoice tool_choice = ToolChoice::automatic;
  json template_kwargs = json::object();  // chat_template_kwargs
};

struct CompletionRequest {
  GenerationParams params;
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_tokens;  // when the prompt is token ids
};

struct ResponsesRequest {
  GenerationParams params;
  json messages;  // input and instructions turned into chat messages
  json tools;     // in the chat-completions shape
  ToolChoice tool_choice = ToolChoice::automatic;
  json metadata;
};

// `max_tokens_fields` lists the names the route accepts for the reply length, first found wins.
Checked<GenerationParams> read_generation_params(const json& body, const SamplingDefaults& defaults,
                                                 const std::vector<std::string>& max_tokens_fields);

Checked<ChatRequest> read_chat_request(const json& body, const SamplingDefaults& defaults);
Checked<CompletionRequest> read_completion_request(const json& body, const SamplingDefaults& defaults);
Checked<ResponsesRequest> read_responses_request(const json& body, const SamplingDefaults& defaults);

Checked<ToolChoice> read_tool_choice(const json& body);

}  // namespace plumb::server
