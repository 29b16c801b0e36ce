#pragma once
// Walks the parsed template: statements write text, expressions compute values, with Jinja's scoping (a frame
// per loop iteration, macro call and block) and the limits that keep hostile templates bounded.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/template/ast.hpp"
#include "text/template/template.hpp"

namespace plumb::text::jinja {

// One frame of names; frames hold a handful of names, so they are searched in order.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const {
    for (const auto& entry : vars)
      if (entry.first == name) return &entry.second;
    return nullptr;
  }
  void set(std::string_view name, Value value) {
    for (auto& entry : vars)
      if (entry.first == name) {
        entry.second = std::move(value);
        return;
      }
    vars.emplace_back(std::string(name), std::move(value));
  }
};
using ScopePtr = std::shared_ptr<Scope>;

// Most statements and expressions under evaluation at once: with 64 macro calls, under 2 MiB of stack.
inline constexpr int kMaxEvalNesting = 2000;

class Interpreter {
 public:
  explicit Interpreter(const Limits& limits) : limits_(limits) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string run(const Program& program, const ScopePtr& globals);

  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
  Value eval(const Expr& expr, const ScopePtr& scope);
  Value call(const Value& callee, CallArgs& args);
  Value filter(const std::string& name, const Value& operand, CallArgs& args);
  bool test(const std::string& name, const Value& operand, CallArgs& args);

  // Counts work against Limits::max_steps; a value's size counts too, so large copies are paid for.
  void charge(std::int64_t steps);
  void charge_value(const Value& value);
  void append(std::string& out, std::string_view text);
  const Limits& limits() const { return limits_; }
  Value make_namespace(MapData attrs);
  void assign_attr(const Value& target, const std::string& name, Value value);

 private:
  const Limits& limits_;
  std::int64_t steps_ = 0;
  int call_depth_ = 0;
  int nesting_ = 0;  // statements and expressions being evaluated at once: bounds the C++ stack used
  // Every namespace made while rendering; emptied at the end so reference cycles through them are freed.
  std::vector<Value> namespaces_;

  Flow exec_stmt(const Stmt& stmt, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& stmt, const ScopePtr& scope, std::string& out);
  std::string render_block(const Body& body, const ScopePtr& scope);
  void assign(const Expr& target, const Value& value, const ScopePtr& scope);
  Value define_macro(const Stmt& stmt, const ScopePtr& scope);
  Value invoke(const Stmt& stmt, const std::weak_ptr<Scope>& home, CallArgs& args);
  Value make_loop(const std::vector<Value>& items);
  void advance_loop(const Value& loop, std::size_t index, const std::vector<Value>& items);

  Value eval_node(const Expr& expr, const ScopePtr& scope);
  CallArgs eval_args(const Expr& call, const ScopePtr& scope);
  Value eval_filter_chain(const Expr& filter, const Value& operand, const ScopePtr& scope);
  Value eval_compare(const Expr& expr, const ScopePtr& scope);
  Value eval_subscript(const Expr& expr, const ScopePtr& scope);
};

Value lookup(const Scope& scope, const std::string& name);

// The globals Hugging Face's environment provides: range, namespace, dict, raise_exception, strftime_now.
void install_globals(Scope& globals);

}  // namespace plumb::text::jinja
