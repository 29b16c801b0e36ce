#include "text/template/ops.hpp"

#include <algorithm>

#include "text/template/methods.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {
// Values nested deeper than this (through namespaces) are refused by repr, == and ordering.
constexpr int kMaxWalkDepth = 512;

void check_walk(int depth) {
  if (depth > kMaxWalkDepth)
    fail("value is nested too deeply to compare or print; expected at most 512 levels");
}

std::string repr_at(const Value& value, int depth);

std::string repr_items(const std::vector<Value>& items, int depth) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr_at(items[i], depth + 1);
  }
  return out;
}

std::string repr_map(const MapData& map, int depth) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, item] : map.items()) {
    if (!first) out += ", ";
    first = false;
    out += py::repr(key) + ": " + repr_at(item, depth + 1);
  }
  return out + "}";
}

std::string repr_at(const Value& value, int depth) {
  check_walk(depth);
  switch (value.kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::String:
      return py::repr(value.as_string());
    case Kind::List:
      if (!value.is_tuple()) return "[" + repr_items(value.items(), depth) + "]";
      return "(" + repr_items(value.items(), depth) + (value.items().size() == 1 ? ",)" : ")");
    case Kind::Map:
      return repr_map(value.entries(), depth);
    case Kind::Namespace:
      return "<Namespace " + repr_map(value.entries(), depth) + ">";
    default:
      return to_str(value);
  }
}

bool equals_at(const Value& a, const Value& b, int depth) {
  check_walk(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    const auto as_int = [](const Value& v) { return v.is_bool() ? std::int64_t{v.as_bool()} : v.as_int(); };
    return as_int(a) == as_int(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.as_string() == b.as_string();
    case Kind::List: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (std::size_t i = 0; i < a.items().size(); ++i)
        if (!equals_at(a.items()[i], b.items()[i], depth + 1)) return false;
      return true;
    }
    case Kind::Map: {
      if (a.entries().size() != b.entries().size()) return false;
      for (const auto& [key, item] : a.entries().items()) {
        const Value* other = b.entries().find(key);
        if (!other || !equals_at(item, *other, depth + 1)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

int compare_at(const Value& a, const Value& b, int depth) {
  check_walk(depth);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    // long double holds every int64 exactly, so mixed int/float order is exact as in Python.
    const auto widen = [](const Value& v) -> long double {
      if (v.is_float()) return v.as_float();
      return v.is_bool() ? (v.as_bool() ? 1 : 0) : static_cast<long double>(v.as_int());
    };
    const long double x = widen(a);
    const long double y = widen(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int order = a.as_string().compare(b.as_string());
    return order < 0 ? -1 : (order > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals_at(x[i], y[i], depth + 1)) continue;
      return compare_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  fail("ordering is not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

std::int64_t index_of(const Value& bound, const char* which) {
  if (bound.is_int()) return bound.as_int();
  if (bound.is_bool()) return bound.as_bool() ? 1 : 0;
  fail(std::string("slice ") + which + " '" + to_str(bound) +
       "' is not an integer; expected an integer or none, got " + type_name(bound));
}
}  // namespace

void fail_undefined(const Value& undefined) {
  fail(undefined.undefined_hint());
}

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Kind::Undefined:
      return "";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return value.as_bool() ? "True" : "False";
    case Kind::Int:
      return std::to_string(value.as_int());
    case Kind::Float:
      return py::float_repr(value.as_float());
    case Kind::String:
      return value.as_string();
    case Kind::Callable:
      return value.fn().is_macro ? "<Macro " + py::repr(value.fn().name) + ">"
                                 : "<built-in function " + value.fn().name + ">";
    default:
      return repr_at(value, 0);
  }
}

std::string to_repr(const Value& value) {
  return repr_at(value, 0);
}
bool equals(const Value& a, const Value& b) {
  return equals_at(a, b, 0);
}
int compare(const Value& a, const Value& b) {
  return compare_at(a, b, 0);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::Undefined:
      return false;
    case Kind::String:
      if (!item.is_string())
        fail("'in <string>' requires a string as left operand; expected str, got " + type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::List:
      return std::any_of(container.items().begin(), container.items().end(),
                         [&](const Value& element) { return equals(element, item); });
    case Kind::Map:
      return item.is_string() && container.entries().find(item.as_string()) != nullptr;
    default:
      fail("argument of type '" + type_name(container) + "' is not iterable; expected str, list or dict");
  }
}

std::vector<Value> iterate(const Value& value) {
  switch (value.kind()) {
    case Kind::Undefined:
      return {};
    case Kind::List:
      return value.items();
    case Kind::Map: {
      std::vector<Value> keys;
      keys.reserve(value.entries().size());
      for (const auto& entry : value.entries().items()) keys.push_back(Value::string(entry.first));
      return keys;
    }
    case Kind::String: {
      check_list_size(py::length(value.as_string()));
      std::vector<Value> chars;
      for (char32_t c : py::decode(value.as_string())) {
        std::string one;
        py::append_utf8(one, c);
        chars.push_back(Value::string(std::move(one)));
      }
      return chars;
    }
    default:
      fail("'" + type_name(value) + "' object is not iterable; expected a list, dict or string");
  }
}

Value slice(const Value& object, const Value& start, const Value& stop, const Value& step_value) {
  if (object.is_undefined()) fail_undefined(object);
  if (!object.is_list() && !object.is_string())
    fail("'" + type_name(object) + "' object cannot be sliced; expected a list, tuple or string");
  const std::int64_t step =
      step_value.is_undefined() || step_value.is_none() ? 1 : index_of(step_value, "step");
  if (step == 0) fail("slice step cannot be zero");
  const std::u32string chars = object.is_string() ? py::decode(object.as_string()) : std::u32string();
  const auto size = static_cast<std::int64_t>(object.is_string() ? chars.size() : object.items().size());
  const std::int64_t lower = step > 0 ? 0 : -1;
  const std::int64_t upper = step > 0 ? size : size - 1;
  auto clamp = [&](const Value& bound, std::int64_t fallback, const char* which) {
    if (bound.is_undefined() || bound.is_none()) return fallback;
    std::int64_t index = index_of(bound, which);
    if (index < 0) index += size;
    return std::clamp(index, lower, upper);
  };
  const std::int64_t first = clamp(start, step > 0 ? lower : upper, "start");
  const std::int64_t last = clamp(stop, step > 0 ? upper : lower, "stop");
  std::vector<Value> items;
  std::u32string text;
  for (std::int64_t i = first; step > 0 ? i < last : i > last; i += step) {
    if (object.is_string())
      text.push_back(chars[static_cast<std::size_t>(i)]);
    else
      items.push_back(object.items()[static_cast<std::size_t>(i)]);
  }
  if (object.is_string()) return Value::string(py::encode(text));
  return Value::list(std::move(items), object.is_tuple());
}

std::string object_description(const Value& value) {
  if (value.is_none()) return "None";
  return type_name(value) + " object";
}

Value get_attr(const Value& object, const std::string& name) {
  if (object.is_undefined()) fail_undefined(object);
  if (object.is_namespace()) {
    if (const Value* found = object.entries().find(name)) return *found;
  } else if (object.is_map() || object.is_string() || object.is_list()) {
    if (auto method = bound_method(object, name)) return *method;
    if (object.is_map())
      if (const Value* found = object.entries().find(name)) return *found;
  }
  return Value::undefined("'" + object_description(object) + "' has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  if (object.is_map() && key.is_string()) {
    if (const Value* found = object.entries().find(key.as_string())) return *found;
  } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    std::int64_t index = key.is_bool() ? key.as_bool() : key.as_int();
    if (object.is_list()) {
      const auto size = static_cast<std::int64_t>(object.items().size());
      if (index < 0) index += size;
      if (index >= 0 && index < size) return object.items()[static_cast<std::size_t>(index)];
    } else {
      const std::u32string chars = py::decode(object.as_string());
      const auto size = static_cast<std::int64_t>(chars.size());
      if (index < 0) index += size;
      if (index >= 0 && index < size)
        return Value::string(py::encode(chars.substr(static_cast<std::size_t>(index), 1)));
    }
  }
  if (key.is_string()) {
    if (object.is_namespace() || object.is_map() || object.is_list() || object.is_string()) {
      const Value attr = object.is_map() ? Value() : get_attr(object, key.as_string());
      if (!attr.is_undefined()) return attr;
      if (object.is_map())
        if (auto method = bound_method(object, key.as_string())) return *method;
    }
    return Value::undefined("'" + object_description(object) + "' has no attribute '" + key.as_string() +
                            "'");
  }
  return Value::undefined("'" + object_description(object) + "' has no element " + to_repr(key));
}

}  // namespace plumb::text::jinja
