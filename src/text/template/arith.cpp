// Arithmetic and concatenation with Python's rules: int stays int (64-bit here, overflow refused), true
// division gives float, // and % floor toward negative infinity, str and list repeat and concatenate.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/template/ops.hpp"

namespace plumb::text::jinja {

namespace {
std::int64_t int_of(const Value& v) {
  return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
}

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  fail("operator '" + std::string(op) + "' is not supported between '" + type_name(a) + "' and '" +
       type_name(b) + "'");
}

[[noreturn]] void overflow(std::string_view op) {
  fail("integer result of '" + std::string(op) + "' does not fit in 64 bits");
}

void check_size(std::size_t bytes, std::size_t max_bytes) {
  if (bytes > max_bytes)
    fail("value of " + std::to_string(bytes) + " bytes is larger than the limit; expected at most " +
         std::to_string(max_bytes));
}

Value int_power(std::int64_t base, std::int64_t exponent) {
  if (exponent < 0) {
    if (base == 0) fail("0 cannot be raised to a negative power");
    return Value::number(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
  std::int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1)
      if (__builtin_mul_overflow(result, base, &result)) overflow("**");
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) overflow("**");
  }
  return Value::integer(result);
}

// Python's float floor division and modulo (the remainder takes the divisor's sign).
double float_mod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

double float_floordiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && (b < 0) != (mod < 0)) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

Value numeric(std::string_view op, const Value& a, const Value& b) {
  const bool as_float = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.as_double() == 0.0) fail("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "**") {
    if (!as_float) return int_power(int_of(a), int_of(b));
    if (a.as_double() == 0.0 && b.as_double() < 0) fail("0.0 cannot be raised to a negative power");
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  if (as_float) {
    const double x = a.as_double();
    const double y = b.as_double();
    if ((op == "//" || op == "%") && y == 0.0) fail("float division or modulo by zero");
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "//") return Value::number(float_floordiv(x, y));
    return Value::number(float_mod(x, y));
  }
  const std::int64_t x = int_of(a);
  const std::int64_t y = int_of(b);
  std::int64_t result = 0;
  if (op == "+" && !__builtin_add_overflow(x, y, &result)) return Value::integer(result);
  if (op == "-" && !__builtin_sub_overflow(x, y, &result)) return Value::integer(result);
  if (op == "*" && !__builtin_mul_overflow(x, y, &result)) return Value::integer(result);
  if (op == "//" || op == "%") {
    if (y == 0) fail("integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) overflow(op);
    std::int64_t quotient = x / y;
    std::int64_t remainder = x % y;
    if (remainder != 0 && ((remainder < 0) != (y < 0))) {
      --quotient;
      remainder += y;
    }
    return Value::integer(op == "//" ? quotient : remainder);
  }
  overflow(op);
}

Value repeat(const Value& sequence, std::int64_t times, std::size_t max_bytes) {
  if (times < 0) times = 0;
  if (sequence.is_string() ? sequence.as_string().empty() : sequence.items().empty()) return sequence;
  if (sequence.is_string()) {
    const std::string& text = sequence.as_string();
    check_size(text.size() * static_cast<std::size_t>(std::min<std::int64_t>(times, 1 << 30)), max_bytes);
    const std::size_t total = text.size() * static_cast<std::size_t>(times);
    std::string out;
    out.reserve(total);
    out = text;
    // Doubling keeps repetition a handful of large copies, whatever the count.
    while (out.size() * 2 <= total) out.append(out);
    out.append(out, 0, total - out.size());
    return Value::string(std::move(out));
  }
  const auto& items = sequence.items();
  check_size(items.size() * 16 * static_cast<std::size_t>(std::min<std::int64_t>(times, 1 << 30)), max_bytes);
  check_list_size(items.size() * static_cast<std::size_t>(std::min<std::int64_t>(times, 1 << 30)));
  std::vector<Value> out;
  for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), sequence.is_tuple());
}

// printf-style "text % values": %s %r %d %i %f (with precision) and %%.
Value percent_format(const std::string& format, const Value& args) {
  const std::vector<Value> values = args.is_tuple() ? args.items() : std::vector<Value>{args};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    std::size_t j = i + 1;
    int precision = -1;
    if (j < format.size() && format[j] == '.') {
      precision = 0;
      while (++j < format.size() && format[j] >= '0' && format[j] <= '9')
        precision = precision * 10 + (format[j] - '0');
    }
    if (j >= format.size()) fail("format string '" + format + "' ends inside a '%' conversion");
    const char type = format[j];
    i = j;
    if (type == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) fail("format string '" + format + "' needs more arguments than it was given");
    const Value& value = values[next++];
    if (type == 's') {
      out += to_str(value);
    } else if (type == 'r') {
      out += to_repr(value);
    } else if ((type == 'd' || type == 'i') && value.is_number()) {
      out += std::to_string(value.is_float() ? static_cast<std::int64_t>(value.as_float()) : int_of(value));
    } else if (type == 'f' && value.is_number()) {
      char buffer[512];
      std::snprintf(buffer, sizeof buffer, "%.*f", precision < 0 ? 6 : std::min(precision, 100),
                    value.as_double());
      out += buffer;
    } else {
      fail("format conversion '%" + std::string(1, type) + "' is not supported for " + type_name(value) +
           "; expected %s, %r, %d, %i or %f");
    }
  }
  if (next < values.size()) fail("format string '" + format + "' has fewer conversions than arguments");
  return Value::string(std::move(out));
}
}  // namespace

Value binary_op(std::string_view op, const Value& a, const Value& b, std::size_t max_bytes) {
  if (op == "~") {
    std::string left = to_str(a);
    const std::string right = to_str(b);
    check_size(left.size() + right.size(), max_bytes);
    return Value::string(left + right);
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return numeric(op, a, b);
  if (op == "+" && a.is_string() && b.is_string()) {
    check_size(a.as_string().size() + b.as_string().size(), max_bytes);
    return Value::string(a.as_string() + b.as_string());
  }
  if (op == "+" && a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    std::vector<Value> items = a.items();
    check_size((items.size() + b.items().size()) * 16, max_bytes);
    items.insert(items.end(), b.items().begin(), b.items().end());
    return Value::list(std::move(items), a.is_tuple());
  }
  if (op == "*") {
    const bool a_seq = a.is_string() || a.is_list();
    const bool b_seq = b.is_string() || b.is_list();
    if (a_seq && (b.is_int() || b.is_bool())) return repeat(a, int_of(b), max_bytes);
    if (b_seq && (a.is_int() || a.is_bool())) return repeat(b, int_of(a), max_bytes);
  }
  if (op == "%" && a.is_string()) return percent_format(a.as_string(), b);
  unsupported(op, a, b);
}

Value negate(const Value& value, bool minus) {
  if (value.is_undefined()) fail_undefined(value);
  if (value.is_float()) return Value::number(minus ? -value.as_float() : value.as_float());
  if (value.is_int() || value.is_bool()) {
    const std::int64_t number = int_of(value);
    if (minus && number == INT64_MIN) overflow("-");
    return Value::integer(minus ? -number : number);
  }
  fail(std::string("unary '") + (minus ? "-" : "+") + "' is not supported for '" + type_name(value) + "'");
}

}  // namespace plumb::text::jinja
