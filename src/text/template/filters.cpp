// Filters over strings and numbers, default, tojson (Hugging Face's json.dumps defaults), and the filter
// registry.
#include "text/template/filters.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/template/args.hpp"
#include "text/template/interpreter.hpp"
#include "text/template/json.hpp"
#include "text/template/methods.hpp"
#include "text/template/ops.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {

std::string what(std::string_view name) {
  return "filter '" + std::string(name) + "'";
}
Value str(std::string text) {
  return Value::string(std::move(text));
}

Value indent(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("indent"), args, {"width", "first", "blank"});
  std::string indention;
  if (a.has(0) && a.at(0).is_string()) {
    indention = a.at(0).as_string();
  } else {
    const std::int64_t width = a.int_at(0, 4);
    if (width > 4096)
      fail("filter 'indent' width " + std::to_string(width) + " is too large; expected at most 4096");
    indention.assign(static_cast<std::size_t>(std::max<std::int64_t>(width, 0)), ' ');
  }
  // Jinja appends a newline before splitting so a trailing newline survives.
  const std::vector<std::string> lines = py::splitlines(to_str(operand) + "\n", false);
  if (indention.size() * lines.size() > kMaxBuiltBytes)
    fail("filter 'indent' result is larger than the limit");
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    const bool indented = i > 0 && (a.bool_at(2, false) || !lines[i].empty());
    out += (indented ? indention : "") + lines[i];
  }
  if (a.bool_at(1, false)) out = indention + out;
  return str(std::move(out));
}

Value html_escape(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList(what("escape"), args, {});
  std::string out;
  for (char c : to_str(operand)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return str(std::move(out));
}

std::optional<std::int64_t> parse_int(std::string text) {
  text = py::strip(text, std::nullopt, true, true);
  std::string digits;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] != '_' ||
        (i > 0 && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
         std::isdigit(static_cast<unsigned char>(text[i + 1]))))
      digits += text[i];
  if (digits.empty()) return std::nullopt;
  std::size_t start = digits[0] == '-' || digits[0] == '+' ? 1 : 0;
  if (start == digits.size() || digits.find_first_not_of("0123456789", start) != std::string::npos)
    return std::nullopt;
  errno = 0;
  const long long parsed = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) fail("filter 'int' result '" + text + "' does not fit in 64 bits");
  return parsed;
}

std::optional<double> parse_float(const std::string& text) {
  const std::string trimmed = py::strip(text, std::nullopt, true, true);
  if (trimmed.empty()) return std::nullopt;
  char* end = nullptr;
  const double parsed = std::strtod(trimmed.c_str(), &end);
  if (end != trimmed.c_str() + trimmed.size()) return std::nullopt;
  const bool hex = trimmed.find_first_of("xX") != std::string::npos;
  if (hex) return std::nullopt;
  return parsed;
}

Value to_int(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("int"), args, {"default", "base"});
  const Value fallback = a.get(0, Value::integer(0));
  if (operand.is_undefined()) fail_undefined(operand);
  if (operand.is_int() || operand.is_bool())
    return Value::integer(operand.is_int() ? operand.as_int() : operand.as_bool());
  if (operand.is_float()) {
    const double number = operand.as_float();
    if (std::isnan(number)) return fallback;
    if (!std::isfinite(number) || std::fabs(number) >= 9.2e18)
      fail("filter 'int' result for " + to_str(operand) + " does not fit in 64 bits");
    return Value::integer(static_cast<std::int64_t>(number));
  }
  if (!operand.is_string()) return fallback;
  if (a.int_at(1, 10) != 10) fail("filter 'int' supports only base 10");
  if (auto parsed = parse_int(operand.as_string())) return Value::integer(*parsed);
  if (auto parsed = parse_float(operand.as_string())) {
    if (std::isnan(*parsed)) return fallback;
    if (!std::isfinite(*parsed) || std::fabs(*parsed) >= 9.2e18)
      fail("filter 'int' result for '" + operand.as_string() + "' does not fit in 64 bits");
    return Value::integer(static_cast<std::int64_t>(*parsed));
  }
  return fallback;
}

Value to_float(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("float"), args, {"default"});
  if (operand.is_undefined()) fail_undefined(operand);
  if (operand.is_number()) return Value::number(operand.as_double());
  if (operand.is_string())
    if (auto parsed = parse_float(operand.as_string())) return Value::number(*parsed);
  return a.get(0, Value::number(0.0));
}

Value round_filter(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("round"), args, {"precision", "method"});
  const std::int64_t precision = a.int_at(0, 0);
  const std::string method = a.string_at(1, "common");
  if (method != "common" && method != "ceil" && method != "floor")
    fail("filter 'round' method '" + method + "' is unknown; expected common, ceil or floor");
  if (operand.is_undefined()) fail_undefined(operand);
  if (!operand.is_number()) fail("filter 'round' needs a number; got " + type_name(operand));
  if (method == "common" && !operand.is_float() && precision >= 0) return Value::integer(operand.as_double());
  const double number = operand.as_double();
  if (precision < -308 || precision > 308) return Value::number(number);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::number(std::ceil(number * scale) / scale);
  if (method == "floor") return Value::number(std::floor(number * scale) / scale);
  if (precision < 0) return Value::number(std::nearbyint(number * scale) / scale);
  // printf rounds the exact binary value half-to-even, as Python's round() does.
  char buffer[400];
  std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(precision), number);
  return Value::number(std::strtod(buffer, nullptr));
}

Value tojson(Interpreter& interp, const Value& operand, CallArgs& args) {
  ArgList a(what("tojson"), args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonStyle style;
  style.ensure_ascii = a.bool_at(0, false);
  if (a.has(1) && !a.at(1).is_none()) {
    if (a.at(1).is_string()) {
      style.indent = a.at(1).as_string();
    } else {
      const std::int64_t width = a.int_at(1, 0);
      if (width > 64)
        fail("filter 'tojson' indent " + std::to_string(width) + " is too large; expected at most 64");
      style.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(width, 0)), ' ');
    }
  }
  if (a.has(2) && !a.at(2).is_none()) {
    const auto& parts = a.at(2).items();
    if (!a.at(2).is_list() || parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
      a.wrong_type(2, "a pair of strings");
    style.item_separator = parts[0].as_string();
    style.key_separator = parts[1].as_string();
  }
  style.sort_keys = a.bool_at(3, false);
  return str(to_json(operand, style, interp.limits().max_output_bytes));
}

Value default_filter(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList a(what("default"), args, {"default_value", "boolean"});
  if (operand.is_undefined() || (a.bool_at(1, false) && !operand.truthy())) return a.get(0, str(""));
  return operand;
}

Value length(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList(what("length"), args, {});
  switch (operand.kind()) {
    case Kind::Undefined:
      return Value::integer(0);
    case Kind::String:
      return Value::integer(static_cast<std::int64_t>(py::length(operand.as_string())));
    case Kind::List:
      return Value::integer(static_cast<std::int64_t>(operand.items().size()));
    case Kind::Map:
      return Value::integer(static_cast<std::int64_t>(operand.entries().size()));
    default:
      fail("object of type '" + type_name(operand) + "' has no length");
  }
}

Value text_filter(const Value& operand, CallArgs& args, std::string_view name,
                  std::string (*fn)(std::string_view)) {
  ArgList(what(name), args, {});
  return str(fn(to_str(operand)));
}

constexpr std::array<NamedFilter, 24> kFilters = {{
    {"safe",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList(what("safe"), args, {});
       return v;
     }},
    {"string",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList(what("string"), args, {});
       return str(to_str(v));
     }},
    {"upper",
     [](Interpreter&, const Value& v, CallArgs& args) { return text_filter(v, args, "upper", py::upper); }},
    {"lower",
     [](Interpreter&, const Value& v, CallArgs& args) { return text_filter(v, args, "lower", py::lower); }},
    {"title", [](Interpreter&, const Value& v,
                 CallArgs& args) { return text_filter(v, args, "title", py::title_words); }},
    {"capitalize", [](Interpreter&, const Value& v,
                      CallArgs& args) { return text_filter(v, args, "capitalize", py::capitalize); }},
    {"trim",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList a(what("trim"), args, {"chars"});
       return str(py::strip(to_str(v), a.optional_string(0), true, true));
     }},
    {"replace",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList a(what("replace"), args, {"old", "new", "count"}, 2);
       const std::int64_t count = a.has(2) && !a.at(2).is_none() ? a.int_at(2, -1) : -1;
       return str(py::replace(to_str(v), to_str(a.at(0)), to_str(a.at(1)), count, kMaxBuiltBytes));
     }},
    {"indent", indent},
    {"escape", html_escape},
    {"e", html_escape},
    {"center",
     [](Interpreter& interp, const Value& v, CallArgs& args) {
       ArgList a(what("center"), args, {"width"});
       CallArgs method_args;
       method_args.positional.push_back(Value::integer(a.int_at(0, 80)));
       return interp.call(get_attr(str(to_str(v)), "center"), method_args);
     }},
    {"format",
     [](Interpreter& interp, const Value& v, CallArgs& args) {
       Value values = Value::list(args.positional, true);
       if (!args.keyword.empty()) {
         MapData named;
         for (const auto& [key, value] : args.keyword) named.set(key, value);
         values = Value::map(std::move(named));
       }
       return binary_op("%", str(to_str(v)), values, interp.limits().max_output_bytes);
     }},
    {"length", length},
    {"count", length},
    {"int", to_int},
    {"float", to_float},
    {"abs",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList(what("abs"), args, {});
       if (v.is_float()) return Value::number(std::fabs(v.as_float()));
       if (!v.is_int() && !v.is_bool()) fail("filter 'abs' needs a number; got " + type_name(v));
       const Value number = negate(v, false);
       return number.as_int() < 0 ? negate(number, true) : number;
     }},
    {"round", round_filter},
    {"tojson", tojson},
    {"default", default_filter},
    {"d", default_filter},
    {"attr",
     [](Interpreter&, const Value& v, CallArgs& args) {
       // Attributes only, never dict keys, as Jinja's attr filter uses getattr alone.
       const std::string name = ArgList(what("attr"), args, {"name"}, 1).string_at(0, "");
       if (v.is_namespace())
         if (const Value* found = v.entries().find(name)) return *found;
       if (auto method = bound_method(v, name)) return *method;
       return Value::undefined("'" + object_description(v) + "' has no attribute '" + name + "'");
     }},
    {"pprint",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList(what("pprint"), args, {});
       return str(to_repr(v));
     }},
}};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const NamedFilter& filter : kFilters)
    if (filter.name == name) return filter.fn;
  std::size_t count = 0;
  const NamedFilter* more = sequence_filters(count);
  for (std::size_t i = 0; i < count; ++i)
    if (more[i].name == name) return more[i].fn;
  return nullptr;
}

}  // namespace plumb::text::jinja
