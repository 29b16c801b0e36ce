// Globals of Hugging Face's template environment: range, namespace, dict, raise_exception, strftime_now.
#include <ctime>

#include "text/template/args.hpp"
#include "text/template/interpreter.hpp"
#include "text/template/ops.hpp"

namespace plumb::text::jinja {

namespace {

std::int64_t range_bound(const Value& value) {
  if (value.is_int()) return value.as_int();
  if (value.is_bool()) return value.as_bool() ? 1 : 0;
  if (value.is_undefined()) fail_undefined(value);
  fail("range() needs integers; got " + type_name(value));
}

Value range(Interpreter& interp, CallArgs& args) {
  if (!args.keyword.empty()) fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range() takes 1 to 3 arguments; got " + std::to_string(p.size()));
  const std::int64_t start = p.size() == 1 ? 0 : range_bound(p[0]);
  const std::int64_t stop = range_bound(p.size() == 1 ? p[0] : p[1]);
  const std::int64_t step = p.size() == 3 ? range_bound(p[2]) : 1;
  if (step == 0) fail("range() step must not be zero");
  const long double span =
      step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  const long double count = span <= 0 ? 0
                                      : (span + std::abs(static_cast<long double>(step)) - 1) /
                                            std::abs(static_cast<long double>(step));
  if (count > static_cast<long double>(interp.limits().max_range))
    fail("range() of " + std::to_string(static_cast<std::int64_t>(count)) +
         " items is larger than the limit; expected at most " + std::to_string(interp.limits().max_range));
  std::vector<Value> items;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i)
    items.push_back(Value::integer(start + i * step));
  interp.charge(static_cast<std::int64_t>(items.size() / 8));
  return Value::list(std::move(items));
}

// dict(**kw) and namespace(...): an optional dict or list of pairs, then keyword arguments.
MapData mapping_arguments(const CallArgs& args, std::string_view name) {
  if (args.positional.size() > 1)
    fail(std::string(name) + "() takes at most 1 positional argument; got " +
         std::to_string(args.positional.size()));
  MapData map;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_map()) {
      for (const auto& [key, value] : source.entries().items()) map.set(key, value);
    } else {
      for (const Value& pair : iterate(source)) {
        const std::vector<Value> parts = iterate(pair);
        if (parts.size() != 2 || !parts[0].is_string())
          fail(std::string(name) + "() needs (key, value) pairs with string keys");
        map.set(parts[0].as_string(), parts[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keyword) map.set(key, value);
  return map;
}

Value strftime_now(Interpreter&, CallArgs& args) {
  ArgList a("strftime_now()", args, {"format"}, 1);
  const std::string format = a.string_at(0, "");
  if (format.size() > 256) fail("strftime_now() format is too long; expected at most 256 bytes");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[1024];
  const std::size_t written = std::strftime(buffer, sizeof buffer, format.c_str(), &local);
  return Value::string(std::string(buffer, written));
}

}  // namespace

void install_globals(Scope& globals) {
  globals.set("range", Value::callable("range", range));
  globals.set("dict", Value::callable("dict", [](Interpreter&, CallArgs& args) {
                return Value::map(mapping_arguments(args, "dict"));
              }));
  globals.set("namespace", Value::callable("namespace", [](Interpreter& interp, CallArgs& args) {
                return interp.make_namespace(mapping_arguments(args, "namespace"));
              }));
  globals.set("raise_exception",
              Value::callable("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
                ArgList a("raise_exception()", args, {"message"});
                fail("template called raise_exception: " + to_str(a.get(0, Value::string(""))));
              }));
  globals.set("strftime_now", Value::callable("strftime_now", strftime_now));
}

}  // namespace plumb::text::jinja
