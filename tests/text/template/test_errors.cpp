// Malformed templates and runtime failures: each gives an error naming the template line and saying what is
// wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/template/template.hpp"

namespace plumb::text::jinja {
namespace {

struct BadCase {
  std::string source;
  std::string where;    // "t.jinja line N"
  std::string problem;  // a phrase the message must hold
};

// Parses and renders; returns the error message, or "" when the template rendered.
std::string failure_of(const std::string& source, const nlohmann::ordered_json& variables = {}) {
  auto parsed = Template::parse(source, "t.jinja");
  if (!parsed) return parsed.error().message;
  auto rendered = parsed->render(variables.is_null() ? nlohmann::ordered_json::object() : variables);
  return rendered ? std::string() : rendered.error().message;
}

void expect_failures(const std::vector<BadCase>& cases) {
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const BadCase& c = cases[i];
    const std::string message = failure_of(c.source);
    EXPECT_NE(message.find(c.where + ": "), std::string::npos)
        << "case " << i << " " << nlohmann::json(c.source).dump() << ": expected location '" << c.where
        << "', got '" << message << "'";
    EXPECT_NE(message.find(c.problem), std::string::npos)
        << "case " << i << " " << nlohmann::json(c.source).dump() << ": expected '" << c.problem << "' in '"
        << message << "'";
  }
}

TEST(TemplateErrors, SyntaxErrorsNameTheLine) {
  expect_failures({
      {"a\n{% if x %}\nb", "t.jinja line 3", "tag 'if' opened on line 2 is not closed; expected 'endif'"},
      {"{% for x in y %}\n{{ x }}", "t.jinja line 2", "expected 'endfor'"},
      {"\n\n{{ 1 + }}", "t.jinja line 3", "unexpected '}}'; expected an expression"},
      {"{% for x in %}{% endfor %}", "t.jinja line 1", "expected an expression"},
      {"ok\n{{ 'abc }}", "t.jinja line 2", "string literal is not closed"},
      {"a\n\n{# comment", "t.jinja line 3", "comment is not closed"},
      {"{{ x }}\n{% endif %}", "t.jinja line 2", "tag 'endif' is unknown or out of place"},
      {"{{ f(1, }}", "t.jinja line 1", "bracket '}' does not close an open bracket; expected ')'"},
      {"{% set %}", "t.jinja line 1", "expected a name to assign to"},
      {"{% macro f(a=1, b) %}{% endmacro %}", "t.jinja line 1", "parameter 'b' has no default"},
      {"x\n{% break %}", "t.jinja line 2", "tag 'break' is outside a loop"},
      {"{{ x | }}", "t.jinja line 1", "expected a filter or test name"},
      {"{{ ) }}", "t.jinja line 1", "bracket ')' does not close an open bracket"},
      {"{{ [1, 2) }}", "t.jinja line 1", "expected ']'"},
      {"{% if x %}{% else %}{% else %}{% endif %}", "t.jinja line 1",
       "tag 'else' is unknown or out of place"},
      {"{% include 'other.jinja' %}", "t.jinja line 1", "tag 'include' is not supported"},
      {"{% frobnicate %}", "t.jinja line 1", "tag 'frobnicate' is unknown"},
      {"{{ 99999999999999999999 }}", "t.jinja line 1", "integer literal '99999999999999999999' is too large"},
      {"{{ '\\x4' }}", "t.jinja line 1", "string escape '\\x4' is truncated"},
      {"{{ '\\ud800' }}", "t.jinja line 1", "is not a Unicode scalar value"},
      {"{{ 1 $ 2 }}", "t.jinja line 1", "character '$' is not allowed inside a tag"},
      {"{% set x = 1 %", "t.jinja line 1", "tag is not closed; expected '%}'"},
      {"{{ x", "t.jinja line 1", "tag is not closed; expected '}}'"},
      {"{% if true %}{% endif extra %}", "t.jinja line 1", "tag 'endif' has extra input"},
      {"{% set true = 1 %}", "t.jinja line 1", "cannot assign to constant 'true'"},
      {"{{ f(a=1, 2) }}", "t.jinja line 1", "positional argument follows a keyword argument"},
      {"{% raw %}never closed", "t.jinja line 1", "raw block is not closed"},
      {"{% call f %}{% endcall %}", "t.jinja line 1", "tag 'call' needs a macro call"},
  });
}

TEST(TemplateErrors, RuntimeErrorsNameTheLine) {
  expect_failures({
      {"line 1\n{{ raise_exception('roles must alternate') }}", "t.jinja line 2",
       "template called raise_exception: roles must alternate"},
      {"\n{{ foo.bar }}", "t.jinja line 2", "'foo' is undefined"},
      {"{% set d = {} %}\n\n{{ d.a.b }}", "t.jinja line 3", "'dict object' has no attribute 'a'"},
      {"{{ 1 + 'a' }}", "t.jinja line 1", "operator '+' is not supported between 'int' and 'str'"},
      {"{% macro f() %}\nok\n{{ 1 // 0 }}\n{% endmacro %}\n{{ f() }}", "t.jinja line 3",
       "integer division or modulo by zero"},
      {"{{ 'a' | nosuch }}", "t.jinja line 1", "filter 'nosuch' is unknown"},
      {"{{ 1 is nosuch }}", "t.jinja line 1", "test 'nosuch' is unknown"},
      {"{{ [].append(1) }}", "t.jinja line 1", "access to attribute 'append' of 'list' object is unsafe"},
      {"{{ 'a' | replace('a') }}", "t.jinja line 1", "filter 'replace' is missing argument 'new'"},
      {"{{ 'a' | indent(bogus=1) }}", "t.jinja line 1",
       "filter 'indent' got an unexpected keyword argument 'bogus'"},
      {"{{ 'a'.split(1) }}", "t.jinja line 1",
       "argument 'sep' of method 'split' has the wrong type; expected str"},
      {"{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", "t.jinja line 1",
       "macro 'f' takes not more than 1 argument"},
      {"{% macro f(a) %}{% endmacro %}{{ f(b=2) }}", "t.jinja line 1",
       "macro 'f' takes no keyword argument 'b'"},
      {"{% set d = {} %}{% set d.x = 1 %}", "t.jinja line 1",
       "cannot set attribute 'x' on a non-namespace object"},
      {"{% set a, b = [1, 2, 3] %}", "t.jinja line 1", "cannot unpack 3 value(s) into 2 names"},
      {"{{ 1 < 'a' }}", "t.jinja line 1", "ordering is not supported between instances of 'int' and 'str'"},
      {"{{ 5() }}", "t.jinja line 1", "'int' object is not callable"},
      {"{% for x in 5 %}{% endfor %}", "t.jinja line 1", "'int' object is not iterable"},
      {"{{ 'ab'[::0] }}", "t.jinja line 1", "slice step cannot be zero"},
      {"{{ {1: 2} }}", "t.jinja line 1", "dict literal key has the wrong type; expected str, got int"},
      {"{{ 9223372036854775807 + 1 }}", "t.jinja line 1", "does not fit in 64 bits"},
      {"{{ [1] | items }}", "t.jinja line 1", "filter 'items' needs a dict; got list"},
      {"{{ undefined_fn() }}", "t.jinja line 1", "'undefined_fn' is undefined"},
      {"{{ '{} {}'.format(1) }}", "t.jinja line 1", "format field 1 has no argument"},
  });
}

TEST(TemplateErrors, InvalidUtf8TemplateIsRefused) {
  const std::string message = failure_of("ok \xff\xfe");
  EXPECT_NE(message.find("is not valid UTF-8"), std::string::npos) << message;
}

TEST(TemplateErrors, VariablesMustBeAnObjectOfValidValues) {
  auto parsed = Template::parse("{{ x }}", "t.jinja");
  ASSERT_TRUE(parsed.ok());
  auto not_object = parsed->render(nlohmann::ordered_json::array());
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.error().message.find("are not a JSON object"), std::string::npos);
  auto huge = parsed->render({{"x", 18446744073709551615ull}});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("variable 'x': JSON integer 18446744073709551615 is too large"),
            std::string::npos)
      << huge.error().message;
}

}  // namespace
}  // namespace plumb::text::jinja
