// str.format with Python's replacement fields: "{}", "{0}", "{name}", "!r"/"!s" and a format spec subset.
#include <cmath>
#include <cstdio>

#include "text/template/methods.hpp"
#include "text/template/ops.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {

struct Spec {
  std::string fill = " ";
  char align = 0;
  char sign = '-';
  std::int64_t width = 0;
  int precision = -1;
  char type = 0;
};

bool is_align(char c) {
  return c == '<' || c == '>' || c == '^' || c == '=';
}

Spec parse_spec(const std::string& text) {
  Spec spec;
  std::size_t pos = 0;
  const std::u32string chars = py::decode(text);
  if (chars.size() >= 2 && chars[1] < 0x80 && is_align(static_cast<char>(chars[1]))) {
    spec.fill = py::encode(chars.substr(0, 1));
    spec.align = static_cast<char>(chars[1]);
    pos = py::encode(chars.substr(0, 2)).size();
  } else if (!text.empty() && is_align(text[0])) {
    spec.align = text[0];
    pos = 1;
  }
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-' || text[pos] == ' '))
    spec.sign = text[pos++];
  if (pos < text.size() && text[pos] == '0') {
    if (!spec.align) {
      spec.fill = "0";
      spec.align = '=';
    }
    ++pos;
  }
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && spec.width < (1 << 24))
    spec.width = spec.width * 10 + (text[pos++] - '0');
  if (pos < text.size() && text[pos] == '.') {
    spec.precision = 0;
    while (++pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && spec.precision < 1000)
      spec.precision = spec.precision * 10 + (text[pos] - '0');
  }
  if (pos < text.size()) spec.type = text[pos++];
  if (pos != text.size() || (spec.type && spec.type != 's' && spec.type != 'd' && spec.type != 'f'))
    fail("format spec '" + text +
         "' is not supported; expected [[fill]align][sign][0][width][.precision][s|d|f]");
  return spec;
}

std::string render_number(const Value& value, const Spec& spec) {
  std::string digits;
  bool negative = false;
  if (spec.type == 'f' || (!spec.type && value.is_float() && spec.precision >= 0)) {
    char buffer[1200];
    const double number = value.as_double();
    negative = std::signbit(number);
    std::snprintf(buffer, sizeof buffer, "%.*f", spec.precision < 0 ? 6 : spec.precision,
                  negative ? -number : number);
    digits = buffer;
  } else if (spec.type == 'd' && value.is_float()) {
    fail("format code 'd' is not supported for a float; expected an int");
  } else {
    const std::string plain =
        to_str(value.is_bool() && spec.type == 'd' ? Value::integer(value.as_bool()) : value);
    negative = !plain.empty() && plain[0] == '-';
    digits = negative ? plain.substr(1) : plain;
  }
  const std::string sign = negative ? "-" : spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "";
  if (spec.align == '=') {
    const auto pad = spec.width - static_cast<std::int64_t>(sign.size() + py::length(digits));
    std::string out = sign;
    for (std::int64_t i = 0; i < pad; ++i) out += spec.fill;
    return out + digits;
  }
  return sign + digits;
}

std::string apply_spec(const Value& value, const std::string& spec_text) {
  if (spec_text.empty()) return to_str(value);
  const Spec spec = parse_spec(spec_text);
  std::string body;
  if (value.is_number() && spec.type != 's') {
    body = render_number(value, spec);
  } else {
    if (spec.type && spec.type != 's')
      fail("format code '" + std::string(1, spec.type) + "' is not supported for " + type_name(value));
    body = to_str(value);
    if (spec.precision >= 0)
      body = py::encode(py::decode(body).substr(0, static_cast<std::size_t>(spec.precision)));
  }
  const auto size = static_cast<std::int64_t>(py::length(body));
  if (spec.width <= size || spec.align == '=') return body;
  const std::int64_t margin = spec.width - size;
  const char align = spec.align ? spec.align : (value.is_number() ? '>' : '<');
  const std::int64_t left = align == '>' ? margin : align == '^' ? margin / 2 : 0;
  std::string out;
  for (std::int64_t i = 0; i < left; ++i) out += spec.fill;
  out += body;
  for (std::int64_t i = 0; i < margin - left; ++i) out += spec.fill;
  return out;
}

const Value& field_value(const std::string& name, const CallArgs& args, std::size_t& auto_index,
                         int& numbering) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    const bool automatic = name.empty();
    if (numbering != 0 && numbering != (automatic ? 1 : 2))
      fail("format string mixes automatic '{}' and numbered '{0}' fields");
    numbering = automatic ? 1 : 2;
    std::size_t index = automatic ? auto_index++ : 0;
    if (!automatic)
      for (char c : name) {
        if (c < '0' || c > '9' || index > 1000) fail("format field '" + name + "' is not a number or a name");
        index = index * 10 + static_cast<std::size_t>(c - '0');
      }
    if (index >= args.positional.size())
      fail("format field " + std::to_string(index) + " has no argument; got " +
           std::to_string(args.positional.size()) + " positional argument(s)");
    return args.positional[index];
  }
  for (const auto& [key, value] : args.keyword)
    if (key == name) return value;
  fail("format field '" + name + "' has no keyword argument of that name");
}

}  // namespace

std::string format_string(const std::string& format, const CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  int numbering = 0;
  for (std::size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') fail("format string has a single '}'; expected '}}' for a literal brace");
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = format.find('}', i);
    if (close == std::string::npos) fail("format string has a '{' with no closing '}'");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    if (const std::size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    char conversion = 0;
    if (field.size() >= 2 && field[field.size() - 2] == '!') {
      conversion = field.back();
      field.resize(field.size() - 2);
    }
    if (field.find_first_of(".[") != std::string::npos)
      fail("format field '" + field + "' uses attribute or index access, which is not supported");
    if (out.size() > kMaxBuiltBytes) fail("format() result is larger than the limit");
    const Value& value = field_value(field, args, auto_index, numbering);
    if (conversion == 'r') {
      out += apply_spec(Value::string(to_repr(value)), spec);
    } else if (conversion == 's' || conversion == 0) {
      out += conversion == 's' ? apply_spec(Value::string(to_str(value)), spec) : apply_spec(value, spec);
    } else {
      fail("format conversion '!" + std::string(1, conversion) + "' is not supported; expected !r or !s");
    }
  }
  return out;
}

}  // namespace plumb::text::jinja
