#include "text/template/value.hpp"

#include <algorithm>

namespace plumb::text::jinja {

namespace {
const std::vector<Value>& empty_items() {
  static const std::vector<Value> none;
  return none;
}
}  // namespace

void fail(std::string message) {
  throw TemplateFailure{std::move(message), 0};
}

void check_list_size(std::size_t items) {
  if (items > kMaxListItems)
    fail("a list of " + std::to_string(items) + " items is larger than the limit; expected at most " +
         std::to_string(kMaxListItems));
}

Value Value::undefined(std::string hint) {
  Value value;
  value.data_ = UndefinedData{std::make_shared<const std::string>(std::move(hint))};
  return value;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  check_list_size(items.size());
  auto data = std::make_shared<ListData>();
  int deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, item.depth());
  if (deepest + 1 > kMaxValueDepth)
    fail("a list nested deeper than " + std::to_string(kMaxValueDepth) + " levels cannot be built");
  data->items = std::move(items);
  data->tuple = tuple;
  data->depth = deepest + 1;
  Value value;
  value.data_ = std::shared_ptr<const ListData>(std::move(data));
  return value;
}

Value Value::map(MapData entries) {
  Value value;
  value.data_ = std::make_shared<const MapData>(std::move(entries));
  return value;
}

Value Value::namespace_of(MapData attrs) {
  auto data = std::make_shared<NamespaceData>();
  data->attrs = std::move(attrs);
  Value value;
  value.data_ = std::move(data);
  return value;
}

Value Value::callable(std::string name, NativeFn fn, bool is_macro) {
  Value value;
  value.data_ = std::make_shared<const CallableData>(CallableData{std::move(name), std::move(fn), is_macro});
  return value;
}

bool Value::is_tuple() const {
  return is_list() && std::get<std::shared_ptr<const ListData>>(data_)->tuple;
}

double Value::as_double() const {
  switch (kind()) {
    case Kind::Bool:
      return as_bool() ? 1.0 : 0.0;
    case Kind::Int:
      return static_cast<double>(as_int());
    default:
      return as_float();
  }
}

const std::vector<Value>& Value::items() const {
  if (!is_list()) return empty_items();
  return std::get<std::shared_ptr<const ListData>>(data_)->items;
}

const MapData& Value::entries() const {
  if (is_namespace()) return ns().attrs;
  return *std::get<std::shared_ptr<const MapData>>(data_);
}

const std::string& Value::undefined_hint() const {
  static const std::string unnamed = "value is undefined";
  const auto& hint = std::get<UndefinedData>(data_).hint;
  return hint ? *hint : unnamed;
}

int Value::depth() const {
  if (is_list()) return std::get<std::shared_ptr<const ListData>>(data_)->depth;
  if (is_map()) return entries().depth();
  return 0;
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_float() != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
      return !items().empty();
    case Kind::Map:
      return entries().size() != 0;
    case Kind::Namespace:
    case Kind::Callable:
      return true;
  }
  return false;
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::List:
      return std::get<std::shared_ptr<const ListData>>(data_).get();
    case Kind::Map:
      return std::get<std::shared_ptr<const MapData>>(data_).get();
    case Kind::Namespace:
      return std::get<std::shared_ptr<NamespaceData>>(data_).get();
    case Kind::Callable:
      return std::get<std::shared_ptr<const CallableData>>(data_).get();
    default:
      return nullptr;
  }
}

const Value* MapData::find(std::string_view key) const {
  // Small dicts (messages, tool calls, the loop variable) are searched in order; large ones through the
  // index.
  if (index_.empty()) {
    for (const auto& [name, value] : items_)
      if (name == key) return &value;
    return nullptr;
  }
  auto found = index_.find(std::string(key));
  return found == index_.end() ? nullptr : &items_[found->second].second;
}

void MapData::set(std::string key, Value value) {
  if (value.depth() + 1 > kMaxValueDepth)
    fail("a dict nested deeper than " + std::to_string(kMaxValueDepth) + " levels cannot be built");
  depth_ = std::max(depth_, value.depth() + 1);
  if (const Value* existing = find(key)) {
    *const_cast<Value*>(existing) = std::move(value);
    return;
  }
  items_.emplace_back(std::move(key), std::move(value));
  if (items_.size() == kIndexFrom) {
    for (std::size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  } else if (items_.size() > kIndexFrom) {
    index_.emplace(items_.back().first, items_.size() - 1);
  }
}

void MapData::replace_at(std::size_t position, Value value) {
  if (value.depth() + 1 > kMaxValueDepth)
    fail("a dict nested deeper than " + std::to_string(kMaxValueDepth) + " levels cannot be built");
  depth_ = std::max(depth_, value.depth() + 1);
  items_[position].second = std::move(value);
}

void MapData::clear() {
  items_.clear();
  index_.clear();
  depth_ = 1;
}

std::string type_name(const Value& value) {
  switch (value.kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return value.is_tuple() ? "tuple" : "list";
    case Kind::Map:
      return "dict";
    case Kind::Namespace:
      return "Namespace";
    case Kind::Callable:
      return value.fn().is_macro ? "Macro" : "function";
  }
  return "object";
}

}  // namespace plumb::text::jinja
