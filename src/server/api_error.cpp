#include "server/api_error.hpp"

#include <fmt/format.h>

namespace plumb::server {

namespace {

json null_if_empty(const std::string& text) {
  return text.empty() ? json(nullptr) : json(text);
}

}  // namespace

json error_json(const ApiError& error) {
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", null_if_empty(error.param)},
            {"code", null_if_empty(error.code)}}}};
}

ApiError invalid_field(std::string param, std::string message, std::string code) {
  return ApiError{400, "invalid_request_error", std::move(code), std::move(param), std::move(message)};
}

ApiError wrong_type(const std::string& param, const std::string& expected, const json& got) {
  return invalid_field(param,
                       fmt::format("request: field '{}' has the wrong type; expected {}, got {}", param,
                                   expected, got.type_name()),
                       "invalid_type");
}

ApiError missing_field(const std::string& param) {
  return invalid_field(param, fmt::format("request: field '{}' is missing; expected it to be present", param),
                       "missing_required_parameter");
}

ApiError unknown_model(const std::string& requested, const std::string& served) {
  return ApiError{404, "invalid_request_error", "model_not_found", "model",
                  fmt::format("request: model '{}' does not exist; expected '{}', got '{}'", requested,
                              served, requested)};
}

ApiError context_exceeded(int64_t limit, int64_t prompt_tokens, int64_t max_tokens) {
  return ApiError{
      400, "invalid_request_error", "context_length_exceeded", "messages",
      fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                  "({} in the prompt, {} for the completion); expected at most {}, got {}",
                  limit, prompt_tokens + max_tokens, prompt_tokens, max_tokens, limit,
                  prompt_tokens + max_tokens)};
}

ApiError internal_error(std::string message) {
  return ApiError{500, "server_error", "internal_error", "", std::move(message)};
}

ApiError unavailable(std::string message) {
  return ApiError{503, "server_error", "unavailable", "", std::move(message)};
}

}  // namespace plumb::server
