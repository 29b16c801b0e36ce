#include "text/template/methods.hpp"

#include <algorithm>
#include <array>

#include "text/template/args.hpp"
#include "text/template/ops.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {

using Method = Value (*)(const Value& self, const CallArgs& args);

struct MethodEntry {
  std::string_view name;
  Method fn;
};

std::string what(std::string_view name) {
  return "method '" + std::string(name) + "'";
}
Value str(std::string text) {
  return Value::string(std::move(text));
}
const std::string& text(const Value& self) {
  return self.as_string();
}

Value strip_method(const Value& self, const CallArgs& args, std::string_view name, bool left, bool right) {
  ArgList a(what(name), args, {"chars"});
  return str(py::strip(text(self), a.optional_string(0), left, right));
}

std::vector<Value> strings(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const std::string& part : parts) out.push_back(str(part));
  return out;
}

Value split_method(const Value& self, const CallArgs& args, bool from_right) {
  ArgList a(what(from_right ? "rsplit" : "split"), args, {"sep", "maxsplit"});
  const auto sep = a.optional_string(0);
  if (sep && sep->empty())
    fail(a.what() + " was given an empty separator; expected a non-empty string or None");
  const std::int64_t maxsplit = a.int_at(1, -1);
  return Value::list(
      strings(from_right ? py::rsplit(text(self), sep, maxsplit) : py::split(text(self), sep, maxsplit)));
}

// The part of self that startswith/endswith look at, from optional code point bounds.
std::string bounded(const Value& self, const ArgList& a) {
  if (!a.has(1) && !a.has(2)) return text(self);
  return slice(self, a.get(1, Value()), a.get(2, Value()), Value()).as_string();
}

Value affix_method(const Value& self, const CallArgs& args, bool at_start) {
  ArgList a(what(at_start ? "startswith" : "endswith"), args, {"prefix", "start", "end"}, 1);
  const std::string subject = bounded(self, a);
  auto matches = [&](const Value& affix) {
    if (!affix.is_string()) a.wrong_type(0, "str or a tuple of str");
    const std::string& s = affix.as_string();
    if (s.size() > subject.size()) return false;
    return at_start ? subject.compare(0, s.size(), s) == 0
                    : subject.compare(subject.size() - s.size(), s.size(), s) == 0;
  };
  if (a.at(0).is_list())
    return Value::boolean(std::any_of(a.at(0).items().begin(), a.at(0).items().end(), matches));
  return Value::boolean(matches(a.at(0)));
}

Value pad_method(const Value& self, const CallArgs& args, std::string_view name) {
  ArgList a(what(name), args, {"width", "fillchar"}, 1);
  const std::int64_t width = a.int_at(0, 0);
  const std::string fill = a.string_at(1, " ");
  if (py::length(fill) != 1) a.wrong_type(1, "a single character");
  const auto size = static_cast<std::int64_t>(py::length(text(self)));
  if (width <= size) return self;
  if (width > (1 << 24))
    fail(a.what() + " width " + std::to_string(width) + " is too large; expected at most 16777216");
  const std::int64_t margin = width - size;
  std::int64_t left = name == "ljust" ? 0 : name == "rjust" ? margin : margin / 2 + (margin & width & 1);
  std::string out;
  for (std::int64_t i = 0; i < left; ++i) out += fill;
  out += text(self);
  for (std::int64_t i = 0; i < margin - left; ++i) out += fill;
  return str(std::move(out));
}

constexpr std::array<MethodEntry, 31> kStringMethods = {{
    {"upper", [](const Value& s, const CallArgs& args) { ArgList(what("upper"), args, {}); return str(py::upper(text(s))); }},
    {"lower", [](const Value& s, const CallArgs& args) { ArgList(what("lower"), args, {}); return str(py::lower(text(s))); }},
    {"title", [](const Value& s, const CallArgs& args) { ArgList(what("title"), args, {}); return str(py::title(text(s))); }},
    {"capitalize",
     [](const Value& s, const CallArgs& args) { ArgList(what("capitalize"), args, {}); return str(py::capitalize(text(s))); }},
    {"strip", [](const Value& s, const CallArgs& args) { return strip_method(s, args, "strip", true, true); }},
    {"lstrip", [](const Value& s, const CallArgs& args) { return strip_method(s, args, "lstrip", true, false); }},
    {"rstrip", [](const Value& s, const CallArgs& args) { return strip_method(s, args, "rstrip", false, true); }},
    {"split", [](const Value& s, const CallArgs& args) { return split_method(s, args, false); }},
    {"rsplit", [](const Value& s, const CallArgs& args) { return split_method(s, args, true); }},
    {"splitlines",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("splitlines"), args, {"keepends"});
       return Value::list(strings(py::splitlines(text(s), a.bool_at(0, false))));
     }},
    {"replace",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("replace"), args, {"old", "new", "count"}, 2);
       return str(py::replace(text(s), a.string_at(0, ""), a.string_at(1, ""), a.int_at(2, -1), kMaxBuiltBytes));
     }},
    {"startswith", [](const Value& s, const CallArgs& args) { return affix_method(s, args, true); }},
    {"endswith", [](const Value& s, const CallArgs& args) { return affix_method(s, args, false); }},
    {"find",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("find"), args, {"sub"}, 1);
       return Value::integer(py::find(text(s), a.string_at(0, ""), false));
     }},
    {"rfind",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("rfind"), args, {"sub"}, 1);
       return Value::integer(py::find(text(s), a.string_at(0, ""), true));
     }},
    {"count",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("count"), args, {"sub"}, 1);
       return Value::integer(py::count(text(s), a.string_at(0, "")));
     }},
    {"join",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("join"), args, {"iterable"}, 1);
       std::string out;
       std::size_t index = 0;
       for (const Value& item : iterate(a.at(0))) {
         if (!item.is_string())
           fail("method 'join' needs str items; expected str, got " + type_name(item) + " at index " +
                std::to_string(index));
         if (index++) out += text(s);
         out += item.as_string();
       }
       return str(std::move(out));
     }},
    {"format", [](const Value& s, const CallArgs& args) { return str(format_string(text(s), args)); }},
    {"isdigit", [](const Value& s, const CallArgs&) { return Value::boolean(py::all_of_class(text(s), 'd')); }},
    {"isalpha", [](const Value& s, const CallArgs&) { return Value::boolean(py::all_of_class(text(s), 'a')); }},
    {"isalnum", [](const Value& s, const CallArgs&) { return Value::boolean(py::all_of_class(text(s), 'n')); }},
    {"isspace", [](const Value& s, const CallArgs&) { return Value::boolean(py::all_of_class(text(s), 's')); }},
    {"islower", [](const Value& s, const CallArgs&) { return Value::boolean(py::is_cased_lower(text(s))); }},
    {"isupper", [](const Value& s, const CallArgs&) { return Value::boolean(py::is_cased_upper(text(s))); }},
    {"center", [](const Value& s, const CallArgs& args) { return pad_method(s, args, "center"); }},
    {"ljust", [](const Value& s, const CallArgs& args) { return pad_method(s, args, "ljust"); }},
    {"rjust", [](const Value& s, const CallArgs& args) { return pad_method(s, args, "rjust"); }},
    {"zfill",
     [](const Value& s, const CallArgs& args) {
       ArgList a(what("zfill"), args, {"width"}, 1);
       std::string body = text(s);
       std::string sign;
       if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
         sign = body.substr(0, 1);
         body.erase(0, 1);
       }
       const auto size = static_cast<std::int64_t>(py::length(text(s)));
       const std::int64_t zeros = std::min<std::int64_t>(a.int_at(0, 0) - size, 1 << 24);
       return str(sign + std::string(static_cast<std::size_t>(std::max<std::int64_t>(zeros, 0)), '0') + body);
     }},
    {"removeprefix",
     [](const Value& s, const CallArgs& args) {
       const std::string affix = ArgList(what("removeprefix"), args, {"prefix"}, 1).string_at(0, "");
       return text(s).compare(0, affix.size(), affix) == 0 ? str(text(s).substr(affix.size())) : s;
     }},
    {"removesuffix",
     [](const Value& s, const CallArgs& args) {
       const std::string affix = ArgList(what("removesuffix"), args, {"suffix"}, 1).string_at(0, "");
       const std::string& body = text(s);
       const bool ends = !affix.empty() && body.size() >= affix.size() &&
                         body.compare(body.size() - affix.size(), affix.size(), affix) == 0;
       return ends ? str(body.substr(0, body.size() - affix.size())) : s;
     }},
    {"casefold", [](const Value& s, const CallArgs& args) { ArgList(what("casefold"), args, {}); return str(py::lower(text(s))); }},
}};

Value map_items(const Value& self) {
  std::vector<Value> pairs;
  for (const auto& [key, value] : self.entries().items())
    pairs.push_back(Value::list({str(key), value}, true));
  return Value::list(std::move(pairs));
}

constexpr std::array<MethodEntry, 5> kMapMethods = {{
    {"get",
     [](const Value& m, const CallArgs& args) {
       ArgList a(what("get"), args, {"key", "default"}, 1);
       const Value* found = a.at(0).is_string() ? m.entries().find(a.at(0).as_string()) : nullptr;
       return found ? *found : a.get(1, Value::none());
     }},
    {"items",
     [](const Value& m, const CallArgs& args) {
       ArgList(what("items"), args, {});
       return map_items(m);
     }},
    {"keys",
     [](const Value& m, const CallArgs& args) {
       ArgList(what("keys"), args, {});
       return Value::list(iterate(m));
     }},
    {"values",
     [](const Value& m, const CallArgs& args) {
       ArgList(what("values"), args, {});
       std::vector<Value> values;
       for (const auto& entry : m.entries().items()) values.push_back(entry.second);
       return Value::list(std::move(values));
     }},
    {"copy",
     [](const Value& m, const CallArgs& args) {
       ArgList(what("copy"), args, {});
       return m;
     }},
}};

constexpr std::array<MethodEntry, 2> kListMethods = {{
    {"index",
     [](const Value& l, const CallArgs& args) {
       ArgList a(what("index"), args, {"value"}, 1);
       const auto& items = l.items();
       for (std::size_t i = 0; i < items.size(); ++i)
         if (equals(items[i], a.at(0))) return Value::integer(static_cast<std::int64_t>(i));
       fail("method 'index' did not find " + to_repr(a.at(0)) + " in the list");
     }},
    {"count",
     [](const Value& l, const CallArgs& args) {
       ArgList a(what("count"), args, {"value"}, 1);
       return Value::integer(std::count_if(l.items().begin(), l.items().end(),
                                           [&](const Value& item) { return equals(item, a.at(0)); }));
     }},
}};

constexpr std::array<std::string_view, 8> kUnsafeList = {"append", "extend",  "insert", "pop",
                                                         "remove", "reverse", "sort",   "clear"};
constexpr std::array<std::string_view, 5> kUnsafeMap = {"pop", "popitem", "setdefault", "update", "clear"};

template <std::size_t N>
std::optional<Value> find_method(const std::array<MethodEntry, N>& table, const Value& self,
                                 const std::string& name) {
  for (const MethodEntry& entry : table)
    if (entry.name == name) {
      const Method fn = entry.fn;
      return Value::callable(name, [self, fn](Interpreter&, CallArgs& args) { return fn(self, args); });
    }
  return std::nullopt;
}

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::optional<Value> bound_method(const Value& object, const std::string& name) {
  if (object.is_string()) return find_method(kStringMethods, object, name);
  if (object.is_map()) {
    if (listed(kUnsafeMap, name))
      return Value::undefined("access to attribute '" + name + "' of 'dict' object is unsafe");
    return find_method(kMapMethods, object, name);
  }
  if (object.is_list()) {
    if (!object.is_tuple() && listed(kUnsafeList, name))
      return Value::undefined("access to attribute '" + name + "' of 'list' object is unsafe");
    return find_method(kListMethods, object, name);
  }
  return std::nullopt;
}

}  // namespace plumb::text::jinja
