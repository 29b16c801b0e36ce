#pragma once
// Jinja's filters and tests as Python jinja2 (3.1) defines them, plus Hugging Face's tojson.
#include <string_view>

#include "text/template/value.hpp"

namespace plumb::text::jinja {

using FilterFn = Value (*)(Interpreter&, const Value& operand, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& operand, CallArgs& args);

// Null when no filter or test has that name.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};
// The filters over sequences (filters_seq.cpp): map, select, sort, join, unique, dictsort, ...
const NamedFilter* sequence_filters(std::size_t& count);

// Jinja's attribute getter for filters: "a.b.0" looks up each part as an item, then as an attribute.
Value attribute_path(const Value& item, const std::string& path);

}  // namespace plumb::text::jinja
