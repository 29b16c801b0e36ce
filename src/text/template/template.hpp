#pragma once
// A Jinja template as Hugging Face renders chat templates: Python jinja2 semantics with trim_blocks and
// lstrip_blocks on, the immutable sandbox, loop controls, and the tojson, raise_exception and strftime_now
// that transformers adds. Parse once, render many times; rendering is const and may run on several threads.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace plumb::text::jinja {

struct Program;

// Bounds that keep a hostile template from exhausting memory, stack or time; breaking one is an error.
struct Limits {
  std::size_t max_output_bytes = std::size_t{16}
                                 << 20;  // the rendered text, and any one string or list built
  int max_call_depth = 64;               // macros calling macros (or caller()) at once
  std::int64_t max_steps = 200'000'000;  // expression evaluations and loop iterations
  std::int64_t max_range = 100'000;      // items in one range(), as Jinja's sandbox allows
};

class Template {
 public:
  // Errors name `name` and the line: "chat_template.jinja line 12: ...".
  static Result<Template> parse(std::string_view source, std::string name = "template");

  // `variables` is a JSON object of top-level names (messages, tools, ...); its key order is kept.
  Result<std::string> render(const nlohmann::ordered_json& variables, const Limits& limits = {}) const;

  const std::string& name() const { return name_; }

 private:
  Template(std::shared_ptr<const Program> program, std::string name)
      : program_(std::move(program)), name_(std::move(name)) {}
  std::shared_ptr<const Program> program_;
  std::string name_;
};

}  // namespace plumb::text::jinja
