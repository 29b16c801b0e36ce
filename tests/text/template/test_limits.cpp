// Hostile templates stop with an error, within time and memory: loops that never end in practice, output that
// grows without bound, recursion, deep nesting in the source, in values built and in the input.
#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "text/template/template.hpp"

namespace plumb::text::jinja {
namespace {

struct Outcome {
  std::string error;
  double seconds = 0;
};

Outcome run(const std::string& source,
            const nlohmann::ordered_json& variables = nlohmann::ordered_json::object()) {
  const auto start = std::chrono::steady_clock::now();
  Outcome outcome;
  auto parsed = Template::parse(source, "t.jinja");
  if (!parsed) {
    outcome.error = parsed.error().message;
  } else if (auto rendered = parsed->render(variables); !rendered) {
    outcome.error = rendered.error().message;
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

// The time bound only catches a hang: it is generous so a busy machine does not fail the test.
void expect_stopped(const std::string& source, const std::string& problem, double max_seconds = 60.0) {
  const Outcome outcome = run(source);
  EXPECT_NE(outcome.error.find(problem), std::string::npos)
      << nlohmann::json(source).dump() << ": expected '" << problem << "', got '" << outcome.error << "'";
  EXPECT_LT(outcome.seconds, max_seconds)
      << nlohmann::json(source).dump() << " took " << outcome.seconds << " s; bound " << max_seconds << " s";
}

TEST(TemplateLimits, LongLoopsStop) {
  expect_stopped("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "template ran longer than the limit");
  expect_stopped("{{ range(1000000000) | length }}", "range() of 1000000000 items is larger than the limit");
}

TEST(TemplateLimits, OutputAndValuesStayBounded) {
  expect_stopped("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
                 "rendered text is larger than the limit");
  expect_stopped(
      "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
      "is larger than the limit");
  expect_stopped("{{ 'x' * 1000000000000 }}", "is larger than the limit");
  expect_stopped("{{ [1, 2] * 1000000000000 }}", "is larger than the limit");
  expect_stopped("{{ 'ab' | center(1000000000) }}", "is too large");
  expect_stopped("{% for i in range(100000) %}{% set x = 'y' * 10000000 %}{% endfor %}",
                 "template ran longer than the limit");
}

TEST(TemplateLimits, RecursionStops) {
  expect_stopped("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nests calls too deeply");
  expect_stopped("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}",
                 "macro 'f' takes no keyword");
  expect_stopped(
      "{% macro f() %}{{ caller() }}{% endmacro %}{% macro g() %}{% call f() %}{{ g() }}{% endcall %}"
      "{% endmacro %}{{ g() }}",
      "nests calls too deeply");
}

TEST(TemplateLimits, DeepSourceNestingIsRefused) {
  expect_stopped("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}", "too deeply");
  expect_stopped("{{ " + std::string(100000, '[') + std::string(100000, ']') + " }}", "too deeply");
  std::string nested_ifs;
  for (int i = 0; i < 5000; ++i) nested_ifs += "{% if true %}";
  expect_stopped(nested_ifs, "too deeply");
  std::string negations = "{{ ";
  for (int i = 0; i < 100000; ++i) negations += "not ";
  expect_stopped(negations + "1 }}", "too deeply");
  expect_stopped("{{ " + std::string(100000, '-') + "1 }}", "too deeply");
}

// Long chains parse without recursion, so the tree's height is bounded separately: evaluating or freeing a
// 100000-high tree would exhaust the stack.
TEST(TemplateLimits, TallExpressionTreesAreRefused) {
  std::string sum = "{{ 1";
  for (int i = 0; i < 100000; ++i) sum += " + 1";
  expect_stopped(sum + " }}", "expression is nested too deeply");
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += " | upper";
  expect_stopped(filters + " }}", "expression is nested too deeply");
  std::string attributes = "{{ x";
  for (int i = 0; i < 100000; ++i) attributes += ".a";
  expect_stopped(attributes + " }}", "expression is nested too deeply");
  std::string logic = "{{ 1";
  for (int i = 0; i < 100000; ++i) logic += " and 1";
  expect_stopped(logic + " }}", "expression is nested too deeply");
  std::string elifs = "{% if false %}";
  for (int i = 0; i < 100000; ++i) elifs += "{% elif false %}";
  expect_stopped(elifs + "{% endif %}", "too deeply");
  expect_stopped("{% set " + std::string(100000, '(') + "a" + std::string(100000, ')') + " = 1 %}",
                 "too deeply");
  std::string allowed = "{{ 1";
  for (int i = 0; i < 200; ++i) allowed += " + 1";
  EXPECT_EQ(run(allowed + " }}").error, "") << "a 200-term sum must render";
}

TEST(TemplateLimits, BuiltinsRefuseOversizedResults) {
  expect_stopped("{% set s = 'ab' * 5000000 %}{{ s | replace('', 'xxxxxxxxxxxxxxxxxxxx') }}",
                 "is larger than the limit");
  expect_stopped("{% set s = 'a\n' * 5000000 %}{{ s | indent(4000) }}", "is larger than the limit");
  expect_stopped("{% set f = '{:16000000}' * 100 %}{{ f.format(*range(100)) }}", "is larger than the limit");
  expect_stopped("{% for c in 'x' * 10000000 %}{% endfor %}", "items is larger than the limit");
  expect_stopped("{{ ([1] * 1000) * 10000 }}", "is larger than the limit");
}

TEST(TemplateLimits, DeepValuesAreRefused) {
  expect_stopped(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}",
      "nested deeper than 256 levels");
  expect_stopped("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "nested too deeply");
  nlohmann::ordered_json deep = 1;
  for (int i = 0; i < 5000; ++i) {
    nlohmann::ordered_json outer = nlohmann::ordered_json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  variables["x"] = std::move(deep);
  const Outcome outcome = run("{{ x }}", variables);
  EXPECT_NE(outcome.error.find("JSON input is nested too deeply"), std::string::npos) << outcome.error;
}

// Runs `source` on a thread with a `stack_bytes` stack.
Outcome run_on_stack(const std::string& source, std::size_t stack_bytes) {
  struct Job {
    std::string source;
    Outcome outcome;
  } job{source, {}};
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, stack_bytes);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    auto* work = static_cast<Job*>(arg);
    work->outcome = run(work->source);
    return nullptr;
  };
  EXPECT_EQ(pthread_create(&thread, &attributes, body, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
  return job.outcome;
}

// 64 nested macro calls, each adding `layers` of nesting of one kind: the tallest such template that stays
// within the nesting limit, found on the main thread's stack.
std::string deepest_allowed(const std::function<std::string(int)>& template_with_layers) {
  for (int layers = 60; layers > 0; --layers) {
    const std::string source = template_with_layers(layers);
    if (run(source).error.empty()) return source;
  }
  return "";
}

// Whatever mix of statements, expressions and calls a template nests, the limits keep it within a 2 MiB
// thread stack, a quarter of the usual default.
TEST(TemplateLimits, DeepestAllowedNestingFitsASmallStack) {
  const std::string tall_expressions = deepest_allowed([](int layers) {
    std::string expression = "f(n - 1)";
    for (int i = 0; i < layers; ++i) expression += " ~ ''";
    return "{% macro f(n) %}{% if n > 0 %}{{ " + expression +
           " }}{% else %}bottom{% endif %}{% endmacro %}{{ f(63) }}";
  });
  const std::string nested_blocks = deepest_allowed([](int layers) {
    std::string open;
    std::string close;
    for (int i = 0; i < layers; ++i) {
      open += i % 2 ? "{% if true %}" : "{% for x in [1] %}";
      close = (i % 2 ? "{% endif %}" : "{% endfor %}") + close;
    }
    return "{% macro f(n) %}{% if n > 0 %}" + open + "{{ f(n - 1) }}" + close +
           "{% else %}bottom{% endif %}{% endmacro %}{{ f(63) }}";
  });
  for (const std::string* source : {&tall_expressions, &nested_blocks}) {
    ASSERT_FALSE(source->empty());
    const Outcome outcome = run_on_stack(*source, std::size_t{2} << 20);
    EXPECT_EQ(outcome.error, "") << "the deepest allowed template failed on a 2 MiB stack";
  }
  std::string taller = "f(n - 1)";
  for (int i = 0; i < 40; ++i) taller += " ~ ''";
  const Outcome too_nested = run("{% macro f(n) %}{% if n > 0 %}{{ " + taller +
                                 " }}{% else %}bottom{% endif %}{% endmacro %}{{ f(63) }}");
  EXPECT_NE(too_nested.error.find("template evaluation nests too deeply"), std::string::npos)
      << too_nested.error;
  const Outcome too_deep =
      run("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% else %}bottom{% endif %}{% endmacro %}{{ f(64) }}");
  EXPECT_NE(too_deep.error.find("nests calls too deeply; expected at most 64 levels"), std::string::npos)
      << too_deep.error;
}

}  // namespace
}  // namespace plumb::text::jinja
