#pragma once
// Python's operations on template values: str(), repr(), ==, ordering, `in`, arithmetic, iteration, slicing.
#include <string>
#include <string_view>
#include <vector>

#include "text/template/value.hpp"

namespace plumb::text::jinja {

// Raises the error Jinja raises when an undefined value is used (its hint, e.g. "'x' is undefined").
[[noreturn]] void fail_undefined(const Value& undefined);

std::string to_str(const Value& value);
std::string to_repr(const Value& value);
bool equals(const Value& a, const Value& b);
// Three-way comparison for <, <=, >, >= and sorting; fails where Python raises TypeError.
int compare(const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
// + - * / // % ** ~ ; results larger than `max_bytes` are refused.
Value binary_op(std::string_view op, const Value& a, const Value& b, std::size_t max_bytes);
Value negate(const Value& value, bool minus);
// Python iteration: list and tuple items, dict keys, the characters of a string; undefined iterates as empty.
std::vector<Value> iterate(const Value& value);
// object[start:stop:step] for lists, tuples and strings; null bounds are given as undefined values.
Value slice(const Value& object, const Value& start, const Value& stop, const Value& step);
// obj.name (attribute first, then item) and obj[key] (item first, then attribute), as Jinja's sandbox does.
Value get_attr(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
// "'dict object'", "None", ...: how Jinja names an object in "has no attribute" messages.
std::string object_description(const Value& value);

}  // namespace plumb::text::jinja
