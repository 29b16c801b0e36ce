#include "server/requests.hpp"

#include <limits>

#include <fmt/format.h>

#include "server/json_fields.hpp"
#include "server/messages.hpp"

namespace plumb::server {

namespace {

constexpr int64_t kMaxReplyTokens = std::numeric_limits<int32_t>::max();
constexpr size_t kMaxStopStrings = 16;

ApiError unsupported(const std::string& param, const std::string& what) {
  return invalid_field(param,
                       fmt::format("request: field '{}' {} is not supported by this server", param, what),
                       "unsupported_parameter");
}

// Fields Plumb does not implement are refused unless they carry their neutral value.
CheckedStatus refuse_unsupported(const json& body) {
  auto n = optional_integer(body, "n", 1, 1, "n == 1 (one choice per request)");
  if (!n.ok()) return n.error();
  for (const char* name : {"frequency_penalty", "presence_penalty"}) {
    auto penalty = optional_number(body, name, 0.0, 0.0, "0 (penalties are not supported)");
    if (!penalty.ok()) return penalty.error();
  }
  auto logprobs = optional_bool(body, "logprobs");
  if (logprobs.ok() && logprobs->value_or(false)) return unsupported("logprobs", "true");
  if (const json* format = field(body, "response_format")) {
    if (!format->is_object()) return wrong_type("response_format", "an object", *format);
    const json* type = field(*format, "type");
    if (type && *type != "text") return unsupported("response_format", "type " + type->dump());
  }
  return {};
}

CheckedStatus read_sampling(const json& body, const SamplingDefaults& defaults,
                            engine::SamplingOptions& out) {
  auto temperature = optional_number(body, "temperature", 0.0, 2.0, "0 <= temperature <= 2");
  PLUMB_CHECK(temperature);
  auto top_p = optional_number(body, "top_p", 0.0, 1.0, "0 < top_p <= 1");
  PLUMB_CHECK(top_p);
  if (top_p->has_value() && **top_p <= 0.0) return out_of_range("top_p", "0 < top_p <= 1", json(**top_p));
  auto top_k =
      optional_integer(body, "top_k", -1, std::numeric_limits<int32_t>::max(), "-1 (off) or top_k >= 0");
  PLUMB_CHECK(top_k);
  auto min_p = optional_number(body, "min_p", 0.0, 1.0, "0 <= min_p <= 1");
  PLUMB_CHECK(min_p);
  auto seed = optional_integer(body, "seed", std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), "a 64-bit integer");
  PLUMB_CHECK(seed);
  out.temperature = static_cast<float>(temperature->value_or(defaults.temperature));
  out.top_p = static_cast<float>(top_p->value_or(defaults.top_p));
  const int64_t k = top_k->value_or(defaults.top_k);
  out.top_k = k < 0 ? 0 : static_cast<int>(k);
  out.min_p = static_cast<float>(min_p->value_or(defaults.min_p));
  if (seed->has_value()) out.seed = static_cast<uint64_t>(**seed);
  return {};
}

CheckedStatus read_stream_fields(const json& body, GenerationParams& params) {
  auto stream = optional_bool(body, "stream");
  PLUMB_CHECK(stream);
  params.stream = stream->value_or(false);
  if (const json* options = field(body, "stream_options")) {
    if (!options->is_object()) return wrong_type("stream_options", "an object", *options);
    auto usage = optional_bool(*options, "include_usage");
    if (!usage.ok())
      return wrong_type("stream_options.include_usage", "a boolean", (*options)["include_usage"]);
    params.include_usage = usage->value_or(false);
  }
  return {};
}

}  // namespace

Checked<GenerationParams> read_generation_params(const json& body, const SamplingDefaults& defaults,
                                                 const std::vector<std::string>& max_tokens_fields) {
  if (!body.is_object()) return wrong_type("body", "a JSON object", body);
  GenerationParams params;
  PLUMB_CHECK(refuse_unsupported(body));
  auto model = optional_string(body, "model");
  PLUMB_CHECK(model);
  params.model = *model;
  for (const std::string& name : max_tokens_fields) {
    auto max_tokens = optional_integer(body, name, 1, kMaxReplyTokens, name + " >= 1");
    PLUMB_CHECK(max_tokens);
    if (max_tokens->has_value()) {
      params.max_tokens = *max_tokens;
      break;
    }
  }
  PLUMB_CHECK(read_sampling(body, defaults, params.sampling));
  auto stop = string_or_strings(body, "stop", kMaxStopStrings);
  PLUMB_CHECK(stop);
  params.stop = std::move(*stop);
  PLUMB_CHECK(read_stream_fields(body, params));
  auto draft = optional_bool(body, "draft");
  PLUMB_CHECK(draft);
  params.draft = draft->value_or(true);
  return params;
}

Checked<ToolChoice> read_tool_choice(const json& body) {
  const json* choice = field(body, "tool_choice");
  if (!choice) return ToolChoice::automatic;
  if (*choice == "auto") return ToolChoice::automatic;
  if (*choice == "none") return ToolChoice::none;
  if (choice->is_string() || choice->is_object())
    return unsupported("tool_choice", choice->dump() + " (only \"auto\" and \"none\")");
  return wrong_type("tool_choice", "\"auto\" or \"none\"", *choice);
}

Checked<ChatRequest> read_chat_request(const json& body, const SamplingDefaults& defaults) {
  auto params = read_generation_params(body, defaults, {"max_completion_tokens", "max_tokens"});
  PLUMB_CHECK(params);
  ChatRequest request;
  request.params = std::move(*params);
  const json* messages = field(body, "messages");
  if (!messages) return missing_field("messages");
  auto template_messages = read_chat_messages(*messages);
  PLUMB_CHECK(template_messages);
  request.messages = std::move(*template_messages);
  auto tools = read_chat_tools(body);
  PLUMB_CHECK(tools);
  request.tools = std::move(*tools);
  auto choice = read_tool_choice(body);
  PLUMB_CHECK(choice);
  request.tool_choice = *choice;
  if (const json* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) return wrong_type("chat_template_kwargs", "an object", *kwargs);
    request.template_kwargs = *kwargs;
  }
  return request;
}

Checked<CompletionRequest> read_completion_request(const json& body, const SamplingDefaults& defaults) {
  auto params = read_generation_params(body, defaults, {"max_tokens"});
  PLUMB_CHECK(params);
  CompletionRequest request;
  request.params = std::move(*params);
  const json* prompt = field(body, "prompt");
  if (!prompt) return missing_field("prompt");
  // One prompt per request: a string, token ids, or a list holding exactly one of those.
  const json* single = prompt;
  if (prompt->is_array() && prompt->size() == 1 && ((*prompt)[0].is_string() || (*prompt)[0].is_array()))
    single = &(*prompt)[0];
  if (single->is_string()) {
    request.prompt_text = single->get<std::string>();
    return request;
  }
  auto tokens = read_token_ids(*single, "prompt");
  PLUMB_CHECK(tokens);
  if (tokens->empty()) return out_of_range("prompt", "a non-empty string or token list", *prompt);
  request.prompt_tokens = std::move(*tokens);
  return request;
}

Checked<ResponsesRequest> read_responses_request(const json& body, const SamplingDefaults& defaults) {
  auto params = read_generation_params(body, defaults, {"max_output_tokens"});
  PLUMB_CHECK(params);
  ResponsesRequest request;
  request.params = std::move(*params);
  if (field(body, "previous_response_id"))
    return unsupported("previous_response_id", "(responses are not stored)");
  auto instructions = optional_string(body, "instructions");
  PLUMB_CHECK(instructions);
  const json* input = field(body, "input");
  if (!input) return missing_field("input");
  auto messages = responses_input_messages(*input, instructions->value_or(""));
  PLUMB_CHECK(messages);
  request.messages = std::move(*messages);
  auto tools = responses_tools(body);
  PLUMB_CHECK(tools);
  request.tools = std::move(*tools);
  auto choice = read_tool_choice(body);
  PLUMB_CHECK(choice);
  request.tool_choice = *choice;
  if (const json* metadata = field(body, "metadata")) {
    if (!metadata->is_object()) return wrong_type("metadata", "an object", *metadata);
    request.metadata = *metadata;
  }
  return request;
}

}  // namespace plumb::server
