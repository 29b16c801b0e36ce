#include "text/template/template.hpp"

#include <fmt/format.h>

#include <new>

#include "text/template/interpreter.hpp"
#include "text/template/json.hpp"
#include "text/template/parser.hpp"
#include "text/template/pystr.hpp"

namespace plumb::text::jinja {

namespace {
Error failure_error(const std::string& name, const TemplateFailure& failure) {
  if (failure.line == 0) return Error{fmt::format("{}: {}", name, failure.message)};
  return Error{fmt::format("{} line {}: {}", name, failure.line, failure.message)};
}
}  // namespace

Result<Template> Template::parse(std::string_view source, std::string name) {
  if (!py::valid_utf8(source)) return error_at(name, "template", name, "is not valid UTF-8");
  try {
    auto program = std::make_shared<const Program>(parse_program(source));
    return Template(std::move(program), std::move(name));
  } catch (const TemplateFailure& failure) {
    return failure_error(name, failure);
  } catch (const std::exception& unexpected) {
    return Error{fmt::format("{}: parsing failed: {}", name, unexpected.what())};
  }
}

Result<std::string> Template::render(const nlohmann::ordered_json& variables, const Limits& limits) const {
  if (!variables.is_object())
    return error_at(name_, "template variables", name_, "are not a JSON object", "object",
                    variables.type_name());
  try {
    Interpreter interpreter(limits);
    auto globals = std::make_shared<Scope>();
    install_globals(*globals);
    auto top = std::make_shared<Scope>();
    top->parent = globals;
    for (const auto& [key, value] : variables.items()) {
      try {
        top->set(key, from_json(value));
      } catch (TemplateFailure& failure) {
        failure.message = "variable '" + key + "': " + failure.message;
        throw;
      }
    }
    return interpreter.run(*program_, top);
  } catch (const TemplateFailure& failure) {
    return failure_error(name_, failure);
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: rendering ran out of memory", name_)};
  } catch (const std::exception& unexpected) {
    return Error{fmt::format("{}: rendering failed: {}", name_, unexpected.what())};
  }
}

}  // namespace plumb::text::jinja
