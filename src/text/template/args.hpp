#pragma once
// Binds the arguments of a call to a builtin's named parameters (positional first, then by keyword), refusing
// unknown, repeated and missing ones with a message that names the builtin.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/template/value.hpp"

namespace plumb::text::jinja {

class ArgList {
 public:
  // `what` names the builtin in messages ("filter 'join'"); the first `required` parameters must be given.
  ArgList(std::string what, const CallArgs& args, std::vector<std::string_view> names,
          std::size_t required = 0);

  bool has(std::size_t index) const { return given_[index]; }
  const Value& at(std::size_t index) const { return bound_[index]; }
  Value get(std::size_t index, Value fallback) const { return has(index) ? bound_[index] : fallback; }
  std::string string_at(std::size_t index, std::string fallback) const;
  // None and an absent argument both read as "not given", as Python's `chars=None` defaults do.
  std::optional<std::string> optional_string(std::size_t index) const;
  std::int64_t int_at(std::size_t index, std::int64_t fallback) const;
  bool bool_at(std::size_t index, bool fallback) const {
    return has(index) ? bound_[index].truthy() : fallback;
  }
  const std::string& what() const { return what_; }
  [[noreturn]] void wrong_type(std::size_t index, std::string_view expected) const;

 private:
  std::string what_;
  std::vector<std::string_view> names_;
  std::vector<Value> bound_;
  std::vector<bool> given_;
};

}  // namespace plumb::text::jinja
