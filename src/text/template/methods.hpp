#pragma once
// Methods templates call on values: str methods, dict.get/items/keys/values, list.index/count. Methods that
// would change a value (list.append, dict.update, ...) are refused, as Hugging Face's immutable sandbox
// refuses them.
#include <optional>
#include <string>

#include "text/template/value.hpp"

namespace plumb::text::jinja {

// The method `name` bound to `object`, an undefined value saying why an unsafe method is refused, or nothing.
std::optional<Value> bound_method(const Value& object, const std::string& name);

// str.format(*args, **kwargs) with "{}", "{0}", "{name}", "!r"/"!s" and
// [[fill]align][width][.precision][type].
std::string format_string(const std::string& format, const CallArgs& args);

}  // namespace plumb::text::jinja
