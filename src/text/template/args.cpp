#include "text/template/args.hpp"

namespace plumb::text::jinja {

ArgList::ArgList(std::string what, const CallArgs& args, std::vector<std::string_view> names,
                 std::size_t required)
    : what_(std::move(what)), names_(std::move(names)), bound_(names_.size()), given_(names_.size(), false) {
  if (args.positional.size() > names_.size())
    fail(what_ + " takes at most " + std::to_string(names_.size()) + " argument(s); got " +
         std::to_string(args.positional.size()));
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    bound_[i] = args.positional[i];
    given_[i] = true;
  }
  for (const auto& [key, value] : args.keyword) {
    std::size_t index = 0;
    while (index < names_.size() && names_[index] != key) ++index;
    if (index == names_.size()) fail(what_ + " got an unexpected keyword argument '" + key + "'");
    if (given_[index]) fail(what_ + " got multiple values for argument '" + key + "'");
    bound_[index] = value;
    given_[index] = true;
  }
  for (std::size_t i = 0; i < required; ++i)
    if (!given_[i]) fail(what_ + " is missing argument '" + std::string(names_[i]) + "'");
}

void ArgList::wrong_type(std::size_t index, std::string_view expected) const {
  fail("argument '" + std::string(names_[index]) + "' of " + what_ + " has the wrong type; expected " +
       std::string(expected) + ", got " + type_name(bound_[index]));
}

std::string ArgList::string_at(std::size_t index, std::string fallback) const {
  if (!has(index)) return fallback;
  if (!bound_[index].is_string()) wrong_type(index, "str");
  return bound_[index].as_string();
}

std::optional<std::string> ArgList::optional_string(std::size_t index) const {
  if (!has(index) || bound_[index].is_none()) return std::nullopt;
  if (!bound_[index].is_string()) wrong_type(index, "str or None");
  return bound_[index].as_string();
}

std::int64_t ArgList::int_at(std::size_t index, std::int64_t fallback) const {
  if (!has(index)) return fallback;
  const Value& value = bound_[index];
  if (value.is_int()) return value.as_int();
  if (value.is_bool()) return value.as_bool() ? 1 : 0;
  wrong_type(index, "int");
}

}  // namespace plumb::text::jinja
