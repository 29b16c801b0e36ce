// Expressions: constants, names, literals, attribute and item access, slicing, calls, filters, tests, logic,
// arithmetic, chained comparisons and the inline if-expression.
#include "text/template/filters.hpp"
#include "text/template/interpreter.hpp"
#include "text/template/ops.hpp"

namespace plumb::text::jinja {

Value Interpreter::eval(const Expr& expr, const ScopePtr& scope) {
  try {
    charge(1);
    if (++nesting_ > kMaxEvalNesting) {
      --nesting_;
      fail("template evaluation nests too deeply; expected at most " + std::to_string(kMaxEvalNesting) +
           " statements and expressions inside each other");
    }
    struct Unnest {
      int& depth;
      ~Unnest() { --depth; }
    } unnest{nesting_};
    return eval_node(expr, scope);
  } catch (TemplateFailure& failure) {
    if (failure.line == 0) failure.line = expr.line;
    throw;
  }
}

Value Interpreter::eval_node(const Expr& expr, const ScopePtr& scope) {
  switch (expr.kind) {
    case ExprKind::Const:
      return expr.constant;
    case ExprKind::Name:
      return lookup(*scope, expr.name);
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      items.reserve(expr.items.size());
      for (const ExprPtr& item : expr.items) items.push_back(eval(*item, scope));
      return Value::list(std::move(items), expr.kind == ExprKind::Tuple);
    }
    case ExprKind::Dict: {
      MapData map;
      for (std::size_t i = 0; i + 1 < expr.items.size(); i += 2) {
        const Value key = eval(*expr.items[i], scope);
        if (!key.is_string())
          fail("dict literal key has the wrong type; expected str, got " + type_name(key));
        map.set(key.as_string(), eval(*expr.items[i + 1], scope));
      }
      return Value::map(std::move(map));
    }
    case ExprKind::Getattr:
      return get_attr(eval(*expr.a, scope), expr.name);
    case ExprKind::Getitem:
      return eval_subscript(expr, scope);
    case ExprKind::Slice:
      fail("a slice can only appear inside '[...]'");
    case ExprKind::Call: {
      const Value callee = eval(*expr.a, scope);
      CallArgs args = eval_args(expr, scope);
      Value result = call(callee, args);
      charge_value(result);
      return result;
    }
    case ExprKind::Filter: {
      if (!expr.a) fail("filter '" + expr.name + "' has no value to filter");
      return eval_filter_chain(expr, eval(*expr.a, scope), scope);
    }
    case ExprKind::Test: {
      const Value operand = eval(*expr.a, scope);
      CallArgs args = eval_args(expr, scope);
      return Value::boolean(test(expr.name, operand, args) != expr.negated);
    }
    case ExprKind::Neg:
    case ExprKind::Pos:
      return negate(eval(*expr.a, scope), expr.kind == ExprKind::Neg);
    case ExprKind::Not:
      return Value::boolean(!eval(*expr.a, scope).truthy());
    case ExprKind::And: {
      Value left = eval(*expr.a, scope);
      return left.truthy() ? eval(*expr.b, scope) : left;
    }
    case ExprKind::Or: {
      Value left = eval(*expr.a, scope);
      return left.truthy() ? left : eval(*expr.b, scope);
    }
    case ExprKind::Binary: {
      const Value left = eval(*expr.a, scope);
      const Value right = eval(*expr.b, scope);
      Value result = binary_op(expr.name, left, right, limits_.max_output_bytes);
      charge_value(result);
      return result;
    }
    case ExprKind::Compare:
      return eval_compare(expr, scope);
    case ExprKind::Cond:
      if (eval(*expr.a, scope).truthy()) return eval(*expr.b, scope);
      if (expr.c) return eval(*expr.c, scope);
      return Value::undefined("the inline if-expression evaluated to false and has no else section");
  }
  fail("expression kind is unknown");
}

Value Interpreter::eval_subscript(const Expr& expr, const ScopePtr& scope) {
  const Value object = eval(*expr.a, scope);
  const Expr& index = *expr.b;
  if (index.kind != ExprKind::Slice) return get_item(object, eval(index, scope));
  auto bound = [&](const ExprPtr& part) { return part ? eval(*part, scope) : Value(); };
  Value result = slice(object, bound(index.a), bound(index.b), bound(index.c));
  charge_value(result);
  return result;
}

Value Interpreter::eval_compare(const Expr& expr, const ScopePtr& scope) {
  Value left = eval(*expr.a, scope);
  for (std::size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = eval(*expr.items[i], scope);
    const std::string& op = expr.ops[i];
    bool holds = false;
    if (op == "==")
      holds = equals(left, right);
    else if (op == "!=")
      holds = !equals(left, right);
    else if (op == "in")
      holds = contains(right, left);
    else if (op == "not in")
      holds = !contains(right, left);
    else {
      const int order = compare(left, right);
      holds = op == "<" ? order < 0 : op == "<=" ? order <= 0 : op == ">" ? order > 0 : order >= 0;
    }
    if (!holds) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

CallArgs Interpreter::eval_args(const Expr& call, const ScopePtr& scope) {
  CallArgs args;
  for (const ExprPtr& item : call.items) args.positional.push_back(eval(*item, scope));
  if (call.star)
    for (Value& item : iterate(eval(*call.star, scope))) args.positional.push_back(std::move(item));
  auto add_keyword = [&](const std::string& key, Value value) {
    for (const auto& existing : args.keyword)
      if (existing.first == key) fail("call got multiple values for keyword argument '" + key + "'");
    args.keyword.emplace_back(key, std::move(value));
  };
  for (const auto& [key, value] : call.keywords) add_keyword(key, eval(*value, scope));
  if (call.star_star) {
    const Value extra = eval(*call.star_star, scope);
    if (!extra.is_map())
      fail("argument after ** has the wrong type; expected a dict, got " + type_name(extra));
    for (const auto& [key, value] : extra.entries().items()) add_keyword(key, value);
  }
  return args;
}

Value Interpreter::eval_filter_chain(const Expr& filter, const Value& operand, const ScopePtr& scope) {
  // In a filter or set block the innermost filter has no operand node: the block's text is its operand.
  const bool inner_is_chain = filter.a && filter.a->kind == ExprKind::Filter && !filter.a->a;
  Value input = operand;
  if (inner_is_chain) input = eval_filter_chain(*filter.a, operand, scope);
  CallArgs args = eval_args(filter, scope);
  Value result = this->filter(filter.name, input, args);
  charge_value(result);
  return result;
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) return callee.fn().fn(*this, args);
  if (callee.is_undefined()) fail_undefined(callee);
  fail("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::filter(const std::string& name, const Value& operand, CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (!fn) fail("filter '" + name + "' is unknown");
  return fn(*this, operand, args);
}

bool Interpreter::test(const std::string& name, const Value& operand, CallArgs& args) {
  const TestFn fn = find_test(name);
  if (!fn) fail("test '" + name + "' is unknown");
  return fn(*this, operand, args);
}

}  // namespace plumb::text::jinja
