#pragma once
// Errors on untrusted input are values (DESIGN.md §9); internal invariants are assertions.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace plumb {

struct Error {
  std::string message;
};

// "<where>: <object> '<name>' <problem>; expected <x>, got <y>"
inline Error error_at(std::string_view where, std::string_view object, std::string_view name,
                      std::string_view problem, std::string_view expected = {}, std::string_view got = {}) {
  std::string text = fmt::format("{}: {} '{}' {}", where, object, name, problem);
  if (!expected.empty() || !got.empty()) text += fmt::format("; expected {}, got {}", expected, got);
  return Error{std::move(text)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line, const char* why) {
  std::fprintf(stderr, "%s:%d: internal invariant '%s' broken: %s\n", file, line, expr, why);
  std::abort();
}

}  // namespace plumb

#define PLUMB_ASSERT(cond, why) ((cond) ? (void)0 : ::plumb::assert_fail(#cond, __FILE__, __LINE__, why))

// Propagates the error of an expression returning Result<...> from the enclosing function.
#define PLUMB_TRY(expr)                                            \
  do {                                                             \
    auto plumb_try_result_ = (expr);                               \
    if (!plumb_try_result_.ok()) return plumb_try_result_.error(); \
  } while (0)
