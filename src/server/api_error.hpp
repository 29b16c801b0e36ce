#pragma once
// Errors in the OpenAI API's shape: {"error": {"message", "type", "param", "code"}} with an HTTP status.
// Every route turns untrusted input into one of these values; none of them ends the server.
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

namespace plumb::server {

// Request and reply bodies keep their key order (chat templates may read it; replies read as OpenAI's do).
using json = nlohmann::ordered_json;

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string code;   // empty: JSON null
  std::string param;  // empty: JSON null
  std::string message;
};

// {"error": {...}} as OpenAI sends it.
json error_json(const ApiError& error);

// 400 invalid_request_error naming the offending field.
ApiError invalid_field(std::string param, std::string message, std::string code = "invalid_value");
// 400 for a field of the wrong JSON type: "<param>: expected <expected>, got <json type>".
ApiError wrong_type(const std::string& param, const std::string& expected, const json& got);
// 400 for a required field that is absent.
ApiError missing_field(const std::string& param);
// 404 model_not_found.
ApiError unknown_model(const std::string& requested, const std::string& served);
// 400 context_length_exceeded with the limit and the count in the message.
ApiError context_exceeded(int64_t limit, int64_t prompt_tokens, int64_t max_tokens);
// 500 server_error for a failure inside the engine.
ApiError internal_error(std::string message);
// 503 while the server drains or the engine refuses a stream.
ApiError unavailable(std::string message);

// A value or the ApiError that explains why there is none.
template <class T>
class [[nodiscard]] Checked {
 public:
  Checked(T value) : state_(std::move(value)) {}
  Checked(ApiError error) : state_(std::move(error)) {}
  bool ok() const { return state_.index() == 0; }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const ApiError& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, ApiError> state_;
};

// Returns the ApiError of a Checked<...> or std::optional<ApiError> expression from the enclosing function.
#define PLUMB_CHECK(expr)                                              \
  do {                                                                 \
    auto plumb_check_result_ = (expr);                                 \
    if (!plumb_check_result_.ok()) return plumb_check_result_.error(); \
  } while (0)

// A Checked<void> stand-in: no value, maybe an error.
class [[nodiscard]] CheckedStatus {
 public:
  CheckedStatus() = default;
  CheckedStatus(ApiError error) : error_(std::move(error)) {}
  bool ok() const { return !error_.has_value(); }
  const ApiError& error() const { return *error_; }

 private:
  std::optional<ApiError> error_;
};

}  // namespace plumb::server
