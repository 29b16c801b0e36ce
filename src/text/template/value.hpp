#pragma once
// The values a template computes with: Python's types as Jinja sees them (undefined, none, bool, int, float,
// str, list/tuple, dict with insertion order, namespace, callable).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace plumb::text::jinja {

class Value;
class Interpreter;
struct CallArgs;

enum class Kind : std::uint8_t { Undefined, None, Bool, Int, Float, String, List, Map, Namespace, Callable };

struct UndefinedData {
  // Why the value is undefined, reported when a template uses it in a way Jinja refuses ("'x' is undefined").
  std::shared_ptr<const std::string> hint;
};
struct NoneData {};
struct ListData;
class MapData;
struct NamespaceData;
struct CallableData;

using NativeFn = std::function<Value(Interpreter&, CallArgs&)>;

class Value {
 public:
  Value() : data_(UndefinedData{}) {}
  static Value undefined(std::string hint);
  static Value none() { return Value(NoneData{}); }
  static Value boolean(bool b) { return Value(b); }
  static Value integer(std::int64_t i) { return Value(i); }
  static Value number(double f) { return Value(f); }
  static Value string(std::string s) { return Value(std::move(s)); }
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value map(MapData entries);
  static Value namespace_of(MapData attrs);
  static Value callable(std::string name, NativeFn fn, bool is_macro = false);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const;
  bool is_map() const { return kind() == Kind::Map; }
  bool is_namespace() const { return kind() == Kind::Namespace; }
  bool is_callable() const { return kind() == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(data_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // Int, bool or float as a double (Python's numeric tower).
  double as_double() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const std::vector<Value>& items() const;
  const MapData& entries() const;
  NamespaceData& ns() const { return *std::get<std::shared_ptr<NamespaceData>>(data_); }
  std::shared_ptr<NamespaceData> ns_handle() const { return std::get<std::shared_ptr<NamespaceData>>(data_); }
  const CallableData& fn() const { return *std::get<std::shared_ptr<const CallableData>>(data_); }
  const std::string& undefined_hint() const;
  // Nesting depth of lists and dicts, kept so hostile templates cannot build values too deep to destroy.
  int depth() const;

  bool truthy() const;
  const void* identity() const;

 private:
  explicit Value(NoneData n) : data_(n) {}
  explicit Value(bool b) : data_(b) {}
  explicit Value(std::int64_t i) : data_(i) {}
  explicit Value(double f) : data_(f) {}
  explicit Value(std::string s) : data_(std::move(s)) {}

  std::variant<UndefinedData, NoneData, bool, std::int64_t, double, std::string,
               std::shared_ptr<const ListData>, std::shared_ptr<const MapData>,
               std::shared_ptr<NamespaceData>, std::shared_ptr<const CallableData>>
      data_;
};

struct ListData {
  std::vector<Value> items;
  bool tuple = false;
  int depth = 1;
};

// A dict with string keys that keeps insertion order, as Python's dict does.
class MapData {
 public:
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  std::size_t size() const { return items_.size(); }
  // Overwrites the value of the key at `position` (its place in insertion order).
  void replace_at(std::size_t position, Value value);
  int depth() const { return depth_; }
  void clear();

 private:
  static constexpr std::size_t kIndexFrom = 16;
  std::vector<std::pair<std::string, Value>> items_;
  std::unordered_map<std::string, std::size_t> index_;  // built once a dict holds kIndexFrom keys
  int depth_ = 1;
};

struct NamespaceData {
  MapData attrs;
};

struct CallableData {
  std::string name;
  NativeFn fn;
  bool is_macro = false;
};

// Arguments of a call, as Python passes them: positional values, then keyword values in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Raised inside the evaluator; render() turns it into an Error naming the template line.
struct TemplateFailure {
  std::string message;
  int line = 0;
};

[[noreturn]] void fail(std::string message);

// Python's type names, as they appear in error messages ("'int' object is not iterable").
std::string type_name(const Value& value);

// Deepest list/dict nesting a template may build or receive.
inline constexpr int kMaxValueDepth = 256;
// Most items one list may hold, and most bytes a builtin may build into one string.
inline constexpr std::size_t kMaxListItems = std::size_t{1} << 20;
inline constexpr std::size_t kMaxBuiltBytes = std::size_t{1} << 26;
void check_list_size(std::size_t items);

}  // namespace plumb::text::jinja
