// Statements: text and output, if, for (loop variable, filter, else, break/continue), set, macros and call
// blocks, filter blocks, with/generation scopes.
#include "text/template/interpreter.hpp"

#include "text/template/ops.hpp"

namespace plumb::text::jinja {

namespace {
ScopePtr child_of(const ScopePtr& parent) {
  auto scope = std::make_shared<Scope>();
  scope->parent = parent;
  return scope;
}

// Counts one level of evaluation for the lifetime of one statement or expression.
struct NestingDepth {
  int& depth;
  explicit NestingDepth(int& counter) : depth(counter) {
    if (++depth > kMaxEvalNesting)
      fail("template evaluation nests too deeply; expected at most " + std::to_string(kMaxEvalNesting) +
           " statements and expressions inside each other");
  }
  ~NestingDepth() { --depth; }
};

// Counts nested macro calls for the lifetime of one call.
struct CallDepth {
  int& depth;
  CallDepth(int& counter, int limit, const std::string& name) : depth(counter) {
    if (++depth > limit)
      fail("macro '" + name + "' nests calls too deeply; expected at most " + std::to_string(limit) +
           " levels");
  }
  ~CallDepth() { --depth; }
};
}  // namespace

Interpreter::~Interpreter() {
  for (Value& ns : namespaces_) ns.ns().attrs.clear();
}

Value lookup(const Scope& scope, const std::string& name) {
  for (const Scope* frame = &scope; frame; frame = frame->parent.get())
    if (const Value* found = frame->find(name)) return *found;
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::charge(std::int64_t steps) {
  steps_ += steps;
  if (steps_ > limits_.max_steps)
    fail("template ran longer than the limit; expected at most " + std::to_string(limits_.max_steps) +
         " evaluation steps");
}

void Interpreter::charge_value(const Value& value) {
  if (value.is_string()) charge(static_cast<std::int64_t>(value.as_string().size() / 16));
  if (value.is_list()) charge(static_cast<std::int64_t>(value.items().size() / 8));
}

void Interpreter::append(std::string& out, std::string_view text) {
  if (out.size() + text.size() > limits_.max_output_bytes)
    fail("rendered text is larger than the limit; expected at most " +
         std::to_string(limits_.max_output_bytes) + " bytes");
  charge(static_cast<std::int64_t>(text.size() / 16));
  out.append(text);
}

Value Interpreter::make_namespace(MapData attrs) {
  Value ns = Value::namespace_of(std::move(attrs));
  namespaces_.push_back(ns);
  return ns;
}

void Interpreter::assign_attr(const Value& target, const std::string& name, Value value) {
  if (!target.is_namespace())
    fail("cannot set attribute '" + name + "' on a non-namespace object; expected a namespace, got " +
         type_name(target));
  target.ns().attrs.set(name, std::move(value));
}

std::string Interpreter::run(const Program& program, const ScopePtr& globals) {
  std::string out;
  exec(program.body, globals, out);
  return out;
}

Interpreter::Flow Interpreter::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const StmtPtr& stmt : body) {
    try {
      charge(1);
      NestingDepth nesting(nesting_);
      const Flow flow = exec_stmt(*stmt, scope, out);
      if (flow != Flow::Normal) return flow;
    } catch (TemplateFailure& failure) {
      if (failure.line == 0) failure.line = stmt->line;
      throw;
    }
  }
  return Flow::Normal;
}

std::string Interpreter::render_block(const Body& body, const ScopePtr& scope) {
  std::string out;
  exec(body, scope, out);
  return out;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
  switch (stmt.kind) {
    case StmtKind::Text:
      append(out, stmt.text);
      return Flow::Normal;
    case StmtKind::Output:
      append(out, to_str(eval(*stmt.expr, scope)));
      return Flow::Normal;
    case StmtKind::If:
      return exec(eval(*stmt.expr, scope).truthy() ? stmt.body : stmt.else_body, scope, out);
    case StmtKind::For:
      return exec_for(stmt, scope, out);
    case StmtKind::Set:
      assign(*stmt.target, eval(*stmt.expr, scope), scope);
      return Flow::Normal;
    case StmtKind::SetBlock: {
      Value text = Value::string(render_block(stmt.body, child_of(scope)));
      if (stmt.expr) text = eval_filter_chain(*stmt.expr, text, scope);
      assign(*stmt.target, text, scope);
      return Flow::Normal;
    }
    case StmtKind::Macro:
      scope->set(stmt.name, define_macro(stmt, scope));
      return Flow::Normal;
    case StmtKind::CallBlock: {
      const Expr& call_expr = *stmt.expr;
      const Value callee = eval(*call_expr.a, scope);
      CallArgs args = eval_args(call_expr, scope);
      const std::weak_ptr<Scope> home = scope;
      const Stmt* block = &stmt;
      args.keyword.emplace_back("caller",
                                Value::callable("caller", [this, block, home](Interpreter&, CallArgs& a) {
                                  return invoke(*block, home, a);
                                }));
      append(out, to_str(call(callee, args)));
      return Flow::Normal;
    }
    case StmtKind::FilterBlock: {
      const Value text = Value::string(render_block(stmt.body, child_of(scope)));
      append(out, to_str(eval_filter_chain(*stmt.expr, text, scope)));
      return Flow::Normal;
    }
    case StmtKind::Scope: {
      ScopePtr inner = child_of(scope);
      for (const Param& binding : stmt.params) inner->set(binding.name, eval(*binding.default_value, scope));
      return exec(stmt.body, inner, out);
    }
    case StmtKind::Break:
      return Flow::Break;
    case StmtKind::Continue:
      return Flow::Continue;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
  std::vector<Value> items = iterate(eval(*stmt.expr, scope));
  charge(static_cast<std::int64_t>(items.size() / 8));
  if (stmt.loop_filter) {
    std::vector<Value> kept;
    ScopePtr frame = child_of(scope);
    for (Value& item : items) {
      frame->vars.clear();
      assign(*stmt.target, item, frame);
      if (eval(*stmt.loop_filter, frame).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec(stmt.else_body, child_of(scope), out);
  // One frame and one loop object serve every iteration: the frame is emptied so names set in one iteration
  // are gone in the next, and the loop object is updated in place, as Jinja's LoopContext is.
  ScopePtr frame = child_of(scope);
  const Value loop = make_loop(items);
  for (std::size_t i = 0; i < items.size(); ++i) {
    charge(4);
    frame->vars.clear();
    assign(*stmt.target, items[i], frame);
    advance_loop(loop, i, items);
    frame->set("loop", loop);
    if (exec(stmt.body, frame, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

namespace {
enum LoopField : std::size_t { kIndex, kIndex0, kRevindex, kRevindex0, kFirst, kLast, kPrevitem, kNextitem };
}  // namespace

Value Interpreter::make_loop(const std::vector<Value>& items) {
  MapData attrs;
  for (const char* name :
       {"index", "index0", "revindex", "revindex0", "first", "last", "previtem", "nextitem"})
    attrs.set(name, Value());
  attrs.set("length", Value::integer(static_cast<std::int64_t>(items.size())));
  attrs.set("depth", Value::integer(1));
  attrs.set("depth0", Value::integer(0));
  Value loop = make_namespace(std::move(attrs));
  std::weak_ptr<NamespaceData> state = loop.ns_handle();
  loop.ns().attrs.set("cycle", Value::callable("loop.cycle", [state](Interpreter&, CallArgs& args) {
                        if (args.positional.empty())
                          fail("loop.cycle needs at least one value to cycle through");
                        const auto held = state.lock();
                        const std::int64_t index0 = held ? held->attrs.items()[kIndex0].second.as_int() : 0;
                        return args.positional[static_cast<std::size_t>(index0) % args.positional.size()];
                      }));
  return loop;
}

void Interpreter::advance_loop(const Value& loop, std::size_t index, const std::vector<Value>& items) {
  const auto length = static_cast<std::int64_t>(items.size());
  const auto i = static_cast<std::int64_t>(index);
  MapData& attrs = loop.ns().attrs;
  attrs.replace_at(kIndex, Value::integer(i + 1));
  attrs.replace_at(kIndex0, Value::integer(i));
  attrs.replace_at(kRevindex, Value::integer(length - i));
  attrs.replace_at(kRevindex0, Value::integer(length - i - 1));
  attrs.replace_at(kFirst, Value::boolean(i == 0));
  attrs.replace_at(kLast, Value::boolean(i == length - 1));
  attrs.replace_at(kPrevitem, i > 0 ? items[index - 1] : Value::undefined("there is no previous item"));
  attrs.replace_at(kNextitem, i + 1 < length ? items[index + 1] : Value::undefined("there is no next item"));
}

void Interpreter::assign(const Expr& target, const Value& value, const ScopePtr& scope) {
  if (target.kind == ExprKind::Name) {
    scope->set(target.name, value);
    return;
  }
  if (target.kind == ExprKind::Getattr) {
    assign_attr(lookup(*scope, target.a->name), target.name, value);
    return;
  }
  const std::vector<Value> parts = iterate(value);
  if (parts.size() != target.items.size())
    fail("cannot unpack " + std::to_string(parts.size()) + " value(s) into " +
         std::to_string(target.items.size()) + " names; expected exactly " +
         std::to_string(target.items.size()));
  for (std::size_t i = 0; i < parts.size(); ++i) assign(*target.items[i], parts[i], scope);
}

Value Interpreter::define_macro(const Stmt& stmt, const ScopePtr& scope) {
  const std::weak_ptr<Scope> home = scope;
  const Stmt* macro = &stmt;
  return Value::callable(
      stmt.name, [this, macro, home](Interpreter&, CallArgs& args) { return invoke(*macro, home, args); },
      true);
}

Value Interpreter::invoke(const Stmt& stmt, const std::weak_ptr<Scope>& home, CallArgs& args) {
  const std::string name = stmt.kind == StmtKind::Macro ? stmt.name : "caller";
  ScopePtr parent = home.lock();
  if (!parent) fail("macro '" + name + "' is called after the block it was defined in ended");
  CallDepth depth(call_depth_, limits_.max_call_depth, name);
  ScopePtr frame = child_of(parent);
  if (args.positional.size() > stmt.params.size() && !stmt.uses_varargs)
    fail("macro '" + name + "' takes not more than " + std::to_string(stmt.params.size()) +
         " argument(s); got " + std::to_string(args.positional.size()));
  std::vector<bool> used(args.keyword.size(), false);
  for (std::size_t i = 0; i < stmt.params.size(); ++i) {
    const Param& param = stmt.params[i];
    Value value = Value::undefined("parameter '" + param.name + "' was not provided");
    bool given = i < args.positional.size();
    if (given) value = args.positional[i];
    for (std::size_t k = 0; k < args.keyword.size(); ++k) {
      if (args.keyword[k].first != param.name) continue;
      if (given) fail("macro '" + name + "' got multiple values for argument '" + param.name + "'");
      value = args.keyword[k].second;
      used[k] = given = true;
    }
    if (!given && param.default_value) value = eval(*param.default_value, frame);
    frame->set(param.name, value);
  }
  MapData extra_keywords;
  frame->set("caller", Value::undefined("no caller is defined for macro '" + name + "'"));
  for (std::size_t k = 0; k < args.keyword.size(); ++k) {
    if (used[k]) continue;
    const auto& [key, value] = args.keyword[k];
    if (key == "caller" && stmt.uses_caller) {
      frame->set("caller", value);
    } else if (stmt.uses_kwargs) {
      extra_keywords.set(key, value);
    } else {
      fail("macro '" + name + "' takes no keyword argument '" + key + "'");
    }
  }
  if (stmt.uses_kwargs) frame->set("kwargs", Value::map(std::move(extra_keywords)));
  if (stmt.uses_varargs) {
    std::vector<Value> rest;
    for (std::size_t i = stmt.params.size(); i < args.positional.size(); ++i)
      rest.push_back(args.positional[i]);
    frame->set("varargs", Value::list(std::move(rest), true));
  }
  return Value::string(render_block(stmt.body, frame));
}

}  // namespace plumb::text::jinja
