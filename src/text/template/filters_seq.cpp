// Filters over sequences and dicts: first, last, list, join, reverse, sort, unique, min, max, sum, map,
// select, reject, selectattr, rejectattr, items, dictsort.
#include <algorithm>
#include <array>

#include "text/template/args.hpp"
#include "text/template/filters.hpp"
#include "text/template/interpreter.hpp"
#include "text/template/ops.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {

std::string what(std::string_view name) {
  return "filter '" + std::string(name) + "'";
}

// sorted(reverse=...) takes an integer or a bool, nothing else.
bool reverse_flag(const ArgList& a, std::size_t index) {
  if (!a.has(index)) return false;
  const Value& flag = a.at(index);
  if (!flag.is_bool() && !flag.is_int()) a.wrong_type(index, "a bool or an integer");
  return flag.truthy();
}

// Sort keys ignore case unless asked not to, as Jinja's ignore_case postprocessing does.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
  Value key =
      attribute.is_undefined() || attribute.is_none() ? item : attribute_path(item, to_str(attribute));
  if (!case_sensitive && key.is_string()) key = Value::string(py::lower(key.as_string()));
  return key;
}

Value first_or_last(const Value& operand, CallArgs& args, bool last) {
  ArgList(what(last ? "last" : "first"), args, {});
  const std::vector<Value> items = iterate(operand);
  if (items.empty())
    return Value::undefined(std::string("No ") + (last ? "last" : "first") + " item, sequence was empty.");
  return last ? items.back() : items.front();
}

Value join(Interpreter& interp, const Value& operand, CallArgs& args) {
  ArgList a(what("join"), args, {"d", "attribute"});
  const std::string separator = to_str(a.get(0, Value::string("")));
  std::string out;
  std::size_t index = 0;
  for (const Value& item : iterate(operand)) {
    if (index++) out += separator;
    out += to_str(a.has(1) ? attribute_path(item, to_str(a.at(1))) : item);
    if (out.size() > interp.limits().max_output_bytes) fail("filter 'join' result is larger than the limit");
  }
  return Value::string(std::move(out));
}

Value reverse(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList(what("reverse"), args, {});
  if (operand.is_string()) {
    std::u32string chars = py::decode(operand.as_string());
    std::reverse(chars.begin(), chars.end());
    return Value::string(py::encode(chars));
  }
  std::vector<Value> items = iterate(operand);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value sort(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("sort"), args, {"reverse", "case_sensitive", "attribute"});
  const bool descending = reverse_flag(a, 0);
  const bool case_sensitive = a.bool_at(1, false);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : iterate(operand))
    keyed.emplace_back(sort_key(item, a.at(2), case_sensitive), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return descending ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
  });
  std::vector<Value> out;
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value::list(std::move(out));
}

Value unique(Interpreter& interp, const Value& operand, CallArgs& args) {
  ArgList a(what("unique"), args, {"case_sensitive", "attribute"});
  std::vector<Value> seen;
  std::vector<Value> out;
  for (Value& item : iterate(operand)) {
    const Value key = sort_key(item, a.at(1), a.bool_at(0, false));
    if (key.is_list() || key.is_map()) fail("filter 'unique' needs hashable items; got " + type_name(key));
    interp.charge(static_cast<std::int64_t>(seen.size()));
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(key);
    out.push_back(std::move(item));
  }
  return Value::list(std::move(out));
}

Value extreme(const Value& operand, CallArgs& args, bool largest) {
  ArgList a(what(largest ? "max" : "min"), args, {"case_sensitive", "attribute"});
  const std::vector<Value> items = iterate(operand);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  Value best_key = sort_key(items[0], a.at(1), a.bool_at(0, false));
  for (std::size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(items[i], a.at(1), a.bool_at(0, false));
    const int order = compare(key, best_key);
    if (largest ? order > 0 : order < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value sum(Interpreter& interp, const Value& operand, CallArgs& args) {
  ArgList a(what("sum"), args, {"attribute", "start"});
  Value total = a.get(1, Value::integer(0));
  for (const Value& item : iterate(operand))
    total = binary_op("+", total, a.has(0) ? attribute_path(item, to_str(a.at(0))) : item,
                      interp.limits().max_output_bytes);
  return total;
}

Value map(Interpreter& interp, const Value& operand, CallArgs& args) {
  std::vector<Value> out;
  // Jinja's map is lazy: with nothing to map its arguments are never looked at.
  if (!operand.truthy()) return Value::list({});
  const std::vector<Value> items = iterate(operand);
  if (args.positional.empty()) {
    ArgList a(what("map"), args, {"attribute", "default"}, 1);
    for (const Value& item : items) {
      Value value = attribute_path(item, to_str(a.at(0)));
      if (value.is_undefined() && a.has(1) && !a.at(1).is_none()) value = a.at(1);
      out.push_back(std::move(value));
    }
    return Value::list(std::move(out));
  }
  if (!args.positional[0].is_string())
    fail("filter 'map' needs a filter name; got " + type_name(args.positional[0]));
  const std::string name = args.positional[0].as_string();
  CallArgs rest{std::vector<Value>(args.positional.begin() + 1, args.positional.end()), args.keyword};
  for (const Value& item : items) {
    CallArgs call = rest;
    out.push_back(interp.filter(name, item, call));
  }
  return Value::list(std::move(out));
}

// select/reject (by_attribute false) and selectattr/rejectattr: keep items whose test result equals `keep`.
Value select_items(Interpreter& interp, const Value& operand, CallArgs& args, bool by_attribute, bool keep) {
  if (!operand.truthy()) return Value::list({});
  const std::size_t offset = by_attribute ? 1 : 0;
  if (by_attribute && args.positional.empty()) fail("filter 'selectattr' needs an attribute name");
  std::optional<std::string> test_name;
  if (args.positional.size() > offset) {
    if (!args.positional[offset].is_string()) fail("filter 'select' needs a test name; got a non-string");
    test_name = args.positional[offset].as_string();
  }
  const std::vector<Value> test_args(
      args.positional.begin() + static_cast<std::ptrdiff_t>(std::min(offset + 1, args.positional.size())),
      args.positional.end());
  std::vector<Value> out;
  if (!operand.truthy()) return Value::list(std::move(out));
  for (const Value& item : iterate(operand)) {
    const Value subject = by_attribute ? attribute_path(item, to_str(args.positional[0])) : item;
    bool passed = subject.truthy();
    if (test_name) {
      CallArgs call{test_args, args.keyword};
      passed = interp.test(*test_name, subject, call);
    }
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value items(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList(what("items"), args, {});
  if (operand.is_undefined()) return Value::list({});
  if (!operand.is_map()) fail("filter 'items' needs a dict; got " + type_name(operand));
  std::vector<Value> pairs;
  for (const auto& [key, value] : operand.entries().items())
    pairs.push_back(Value::list({Value::string(key), value}, true));
  return Value::list(std::move(pairs));
}

Value dictsort(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("dictsort"), args, {"case_sensitive", "by", "reverse"});
  const std::string by = a.string_at(1, "key");
  if (by != "key" && by != "value")
    fail("filter 'dictsort' can only sort by \"key\" or \"value\"; got '" + by + "'");
  if (operand.is_undefined()) fail_undefined(operand);
  if (!operand.is_map()) fail("filter 'dictsort' needs a dict; got " + type_name(operand));
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [key, value] : operand.entries().items()) {
    const Value pair = Value::list({Value::string(key), value}, true);
    keyed.emplace_back(sort_key(by == "key" ? pair.items()[0] : value, Value(), a.bool_at(0, false)), pair);
  }
  const bool descending = reverse_flag(a, 2);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return descending ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
  });
  std::vector<Value> out;
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value::list(std::move(out));
}

constexpr std::array<NamedFilter, 17> kSequenceFilters = {{
    {"first", [](Interpreter&, const Value& v, CallArgs& args) { return first_or_last(v, args, false); }},
    {"last", [](Interpreter&, const Value& v, CallArgs& args) { return first_or_last(v, args, true); }},
    {"list",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList(what("list"), args, {});
       return Value::list(iterate(v));
     }},
    {"join", join},
    {"reverse", reverse},
    {"sort", sort},
    {"unique", unique},
    {"min", [](Interpreter&, const Value& v, CallArgs& args) { return extreme(v, args, false); }},
    {"max", [](Interpreter&, const Value& v, CallArgs& args) { return extreme(v, args, true); }},
    {"sum", sum},
    {"map", map},
    {"select",
     [](Interpreter& i, const Value& v, CallArgs& args) { return select_items(i, v, args, false, true); }},
    {"reject",
     [](Interpreter& i, const Value& v, CallArgs& args) { return select_items(i, v, args, false, false); }},
    {"selectattr",
     [](Interpreter& i, const Value& v, CallArgs& args) { return select_items(i, v, args, true, true); }},
    {"rejectattr",
     [](Interpreter& i, const Value& v, CallArgs& args) { return select_items(i, v, args, true, false); }},
    {"items", items},
    {"dictsort", dictsort},
}};

}  // namespace

const NamedFilter* sequence_filters(std::size_t& count) {
  count = kSequenceFilters.size();
  return kSequenceFilters.data();
}

Value attribute_path(const Value& item, const std::string& path) {
  Value current = item;
  for (const std::string& part : py::split(path, std::string("."), -1)) {
    const bool is_index =
        !part.empty() && part.size() < 19 && part.find_first_not_of("0123456789") == std::string::npos;
    current = get_item(current, is_index ? Value::integer(std::stoll(part)) : Value::string(part));
  }
  return current;
}

}  // namespace plumb::text::jinja
