// Jinja's tests ("x is defined", "n is divisibleby 3", ...) with Python's type rules: bool counts as a number
// but not as an integer, dicts and undefined values are iterable.
#include <array>

#include "text/template/args.hpp"
#include "text/template/filters.hpp"
#include "text/template/interpreter.hpp"
#include "text/template/ops.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {

struct NamedTest {
  std::string_view name;
  TestFn fn;
};

std::string what(std::string_view name) {
  return "test '" + std::string(name) + "'";
}

// Tests of the value alone: they take no arguments.
template <bool (*Check)(const Value&)>
bool plain(Interpreter&, const Value& operand, CallArgs& args) {
  ArgList("a test", args, {});
  return Check(operand);
}

bool parity(const Value& operand, std::int64_t remainder) {
  if (operand.is_undefined()) fail_undefined(operand);
  if (!operand.is_number()) fail("test 'odd'/'even' needs a number; got " + type_name(operand));
  const Value mod = binary_op("%", operand, Value::integer(2), 64);
  return equals(mod, Value::integer(remainder));
}

const Value& other(CallArgs& args, std::string_view name) {
  if (args.positional.size() + args.keyword.size() != 1) fail(what(name) + " takes exactly one argument");
  return args.positional.empty() ? args.keyword[0].second : args.positional[0];
}

bool order(CallArgs& args, const Value& operand, std::string_view name, bool (*holds)(int)) {
  return holds(compare(operand, other(args, name)));
}

constexpr std::array<NamedTest, 34> kTests = {{
    {"defined", plain<[](const Value& v) { return !v.is_undefined(); }>},
    {"undefined", plain<[](const Value& v) { return v.is_undefined(); }>},
    {"none", plain<[](const Value& v) { return v.is_none(); }>},
    {"boolean", plain<[](const Value& v) { return v.is_bool(); }>},
    {"true", plain<[](const Value& v) { return v.is_bool() && v.as_bool(); }>},
    {"false", plain<[](const Value& v) { return v.is_bool() && !v.as_bool(); }>},
    {"integer", plain<[](const Value& v) { return v.is_int(); }>},
    {"float", plain<[](const Value& v) { return v.is_float(); }>},
    {"number", plain<[](const Value& v) { return v.is_number(); }>},
    {"string", plain<[](const Value& v) { return v.is_string(); }>},
    {"mapping", plain<[](const Value& v) { return v.is_map(); }>},
    {"iterable", plain<[](const Value& v) { return v.is_list() || v.is_map() || v.is_string() || v.is_undefined(); }>},
    {"sequence", plain<[](const Value& v) { return v.is_list() || v.is_map() || v.is_string() || v.is_undefined(); }>},
    {"callable", plain<[](const Value& v) { return v.is_callable() || v.is_undefined(); }>},
    {"escaped", plain<[](const Value&) { return false; }>},
    {"lower", plain<[](const Value& v) { return py::is_cased_lower(to_str(v)); }>},
    {"upper", plain<[](const Value& v) { return py::is_cased_upper(to_str(v)); }>},
    {"odd", plain<[](const Value& v) { return parity(v, 1); }>},
    {"even", plain<[](const Value& v) { return parity(v, 0); }>},
    {"divisibleby",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList a(what("divisibleby"), args, {"num"}, 1);
       if (v.is_undefined()) fail_undefined(v);
       return equals(binary_op("%", v, a.at(0), 64), Value::integer(0));
     }},
    {"eq", [](Interpreter&, const Value& v, CallArgs& args) { return equals(v, other(args, "eq")); }},
    {"equalto", [](Interpreter&, const Value& v, CallArgs& args) { return equals(v, other(args, "equalto")); }},
    {"==", [](Interpreter&, const Value& v, CallArgs& args) { return equals(v, other(args, "==")); }},
    {"ne", [](Interpreter&, const Value& v, CallArgs& args) { return !equals(v, other(args, "ne")); }},
    {"!=", [](Interpreter&, const Value& v, CallArgs& args) { return !equals(v, other(args, "!=")); }},
    {"lt", [](Interpreter&, const Value& v, CallArgs& args) { return order(args, v, "lt", [](int c) { return c < 0; }); }},
    {"lessthan",
     [](Interpreter&, const Value& v, CallArgs& args) { return order(args, v, "lessthan", [](int c) { return c < 0; }); }},
    {"le", [](Interpreter&, const Value& v, CallArgs& args) { return order(args, v, "le", [](int c) { return c <= 0; }); }},
    {"gt", [](Interpreter&, const Value& v, CallArgs& args) { return order(args, v, "gt", [](int c) { return c > 0; }); }},
    {"greaterthan",
     [](Interpreter&, const Value& v, CallArgs& args) { return order(args, v, "greaterthan", [](int c) { return c > 0; }); }},
    {"ge", [](Interpreter&, const Value& v, CallArgs& args) { return order(args, v, "ge", [](int c) { return c >= 0; }); }},
    {"in", [](Interpreter&, const Value& v, CallArgs& args) { return contains(other(args, "in"), v); }},
    {"sameas",
     [](Interpreter&, const Value& v, CallArgs& args) {
       const Value& o = other(args, "sameas");
       if (v.identity() || o.identity()) return v.identity() == o.identity();
       return v.kind() == o.kind() && (v.is_none() || v.is_undefined() || equals(v, o));
     }},
    {"filter",
     [](Interpreter&, const Value& v, CallArgs& args) {
       ArgList(what("filter"), args, {});
       return v.is_string() && find_filter(v.as_string()) != nullptr;
     }},
}};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const NamedTest& test : kTests)
    if (test.name == name) return test.fn;
  if (name == "<")
    return [](Interpreter&, const Value& v, CallArgs& args) {
      return order(args, v, "<", [](int c) { return c < 0; });
    };
  if (name == ">")
    return [](Interpreter&, const Value& v, CallArgs& args) {
      return order(args, v, ">", [](int c) { return c > 0; });
    };
  if (name == "<=")
    return [](Interpreter&, const Value& v, CallArgs& args) {
      return order(args, v, "<=", [](int c) { return c <= 0; });
    };
  if (name == ">=")
    return [](Interpreter&, const Value& v, CallArgs& args) {
      return order(args, v, ">=", [](int c) { return c >= 0; });
    };
  if (name == "test")
    return [](Interpreter&, const Value& v, CallArgs& args) {
      ArgList(what("test"), args, {});
      return v.is_string() && find_test(v.as_string()) != nullptr;
    };
  return nullptr;
}

}  // namespace plumb::text::jinja
