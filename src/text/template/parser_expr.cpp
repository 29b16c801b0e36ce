// Expressions with Jinja's precedence: conditional, or, and, not, comparisons and `in`, + -, ~, * / // %, **,
// unary signs, then primaries with attribute, subscript and call postfixes, filters and tests.
#include <algorithm>

#include "text/template/parser.hpp"

namespace plumb::text::jinja {

namespace {
struct Nesting {
  int& depth;
  Nesting(int& counter, int line) : depth(counter) {
    if (++depth > kMaxNesting)
      throw TemplateFailure{"template nests expressions too deeply; expected at most " +
                                std::to_string(kMaxNesting) + " levels",
                            line};
  }
  ~Nesting() { --depth; }
};

ExprPtr binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = left->line;
  expr->name = std::move(op);
  expr->a = std::move(left);
  expr->b = std::move(right);
  seal(*expr);
  return expr;
}

// Seals a finished node and hands it back.
ExprPtr sealed(ExprPtr expr) {
  seal(*expr);
  return expr;
}
}  // namespace

void seal(Expr& expr) {
  int tallest = 0;
  auto consider = [&](const ExprPtr& child) {
    if (child) tallest = std::max(tallest, child->depth);
  };
  consider(expr.a);
  consider(expr.b);
  consider(expr.c);
  consider(expr.star);
  consider(expr.star_star);
  for (const ExprPtr& item : expr.items) consider(item);
  for (const auto& keyword : expr.keywords) consider(keyword.second);
  expr.depth = tallest + 1;
  if (expr.depth > kMaxExprDepth)
    throw TemplateFailure{"expression is nested too deeply; expected at most " +
                              std::to_string(kMaxExprDepth) + " levels of operators, filters and calls",
                          expr.line};
}

ExprPtr Parser::parse_tuple(bool with_condexpr, bool explicit_parens,
                            const std::vector<std::string_view>& end_names) {
  const int line = current().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    const bool at_end = current().type == Tok::VarEnd || current().type == Tok::BlockEnd || is_op(")") ||
                        (current().type == Tok::Name &&
                         std::find(end_names.begin(), end_names.end(), current().text) != end_names.end());
    if (at_end) break;
    items.push_back(parse_expression(with_condexpr));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items.front());
    if (!explicit_parens) fail_here("expected an expression, got " + describe(current()));
  }
  auto tuple = node(ExprKind::Tuple, line);
  tuple->items = std::move(items);
  return sealed(std::move(tuple));
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  Nesting guard(depth_, current().line);
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    auto cond = node(ExprKind::Cond, expr->line);
    cond->a = parse_or();
    cond->b = std::move(expr);
    if (skip_name("else")) cond->c = parse_condexpr();
    expr = sealed(std::move(cond));
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr expr = parse_and();
  while (skip_name("or")) expr = binary(ExprKind::Or, "or", std::move(expr), parse_and());
  return expr;
}

ExprPtr Parser::parse_and() {
  ExprPtr expr = parse_not();
  while (skip_name("and")) expr = binary(ExprKind::And, "and", std::move(expr), parse_not());
  return expr;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    Nesting guard(depth_, current().line);
    auto expr = node(ExprKind::Not, current().line);
    ++pos_;
    expr->a = parse_not();
    return sealed(std::move(expr));
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  ExprPtr first = parse_math1();
  ExprPtr compare;
  static const std::vector<std::string_view> operators = {"==", "!=", "<", "<=", ">", ">="};
  while (true) {
    std::string op;
    if (current().type == Tok::Op &&
        std::find(operators.begin(), operators.end(), current().text) != operators.end()) {
      op = current().text;
      ++pos_;
    } else if (skip_name("in")) {
      op = "in";
    } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
      pos_ += 2;
      op = "not in";
    } else {
      break;
    }
    if (!compare) {
      compare = node(ExprKind::Compare, first->line);
      compare->a = std::move(first);
    }
    compare->ops.push_back(op);
    compare->items.push_back(parse_math1());
  }
  return compare ? sealed(std::move(compare)) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr expr = parse_concat();
  while (is_op("+") || is_op("-")) {
    const std::string op = tokens_[pos_++].text;
    expr = binary(ExprKind::Binary, op, std::move(expr), parse_concat());
  }
  return expr;
}

ExprPtr Parser::parse_concat() {
  ExprPtr expr = parse_math2();
  while (skip_op("~")) expr = binary(ExprKind::Binary, "~", std::move(expr), parse_math2());
  return expr;
}

ExprPtr Parser::parse_math2() {
  ExprPtr expr = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const std::string op = tokens_[pos_++].text;
    expr = binary(ExprKind::Binary, op, std::move(expr), parse_pow());
  }
  return expr;
}

ExprPtr Parser::parse_pow() {
  ExprPtr expr = parse_unary(true);
  while (skip_op("**")) expr = binary(ExprKind::Binary, "**", std::move(expr), parse_unary(true));
  return expr;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Nesting guard(depth_, current().line);
  ExprPtr expr;
  if (is_op("-") || is_op("+")) {
    expr = node(is_op("-") ? ExprKind::Neg : ExprKind::Pos, current().line);
    ++pos_;
    expr->a = parse_unary(false);
    seal(*expr);
  } else {
    expr = parse_primary();
  }
  expr = parse_postfix(std::move(expr));
  if (with_filter) expr = parse_filter_expr(std::move(expr));
  return expr;
}

ExprPtr Parser::parse_primary() {
  const Token& token = current();
  const int line = token.line;
  if (token.type == Tok::Name) {
    ++pos_;
    auto expr = node(ExprKind::Const, line);
    if (token.text == "true" || token.text == "True") {
      expr->constant = Value::boolean(true);
    } else if (token.text == "false" || token.text == "False") {
      expr->constant = Value::boolean(false);
    } else if (token.text == "none" || token.text == "None") {
      expr->constant = Value::none();
    } else {
      expr->kind = ExprKind::Name;
      expr->name = token.text;
      if (!macros_.empty()) {
        if (token.text == "varargs") macros_.back()->uses_varargs = true;
        if (token.text == "kwargs") macros_.back()->uses_kwargs = true;
        if (token.text == "caller") macros_.back()->uses_caller = true;
      }
    }
    return expr;
  }
  if (token.type == Tok::String) {
    std::string text;
    while (current().type == Tok::String) text += tokens_[pos_++].text;
    auto expr = node(ExprKind::Const, line);
    expr->constant = Value::string(std::move(text));
    return expr;
  }
  if (token.type == Tok::Int || token.type == Tok::Float) {
    auto expr = node(ExprKind::Const, line);
    expr->constant =
        token.type == Tok::Int ? Value::integer(token.int_value) : Value::number(token.float_value);
    ++pos_;
    return expr;
  }
  if (skip_op("(")) {
    ExprPtr expr = parse_tuple(true, true);
    expect_op(")");
    return expr;
  }
  if (skip_op("[")) return parse_collection("]", ExprKind::List);
  if (skip_op("{")) return parse_collection("}", ExprKind::Dict);
  fail_here("unexpected " + describe(token) + "; expected an expression");
}

ExprPtr Parser::parse_collection(std::string_view close, ExprKind kind) {
  auto expr = node(kind, current().line);
  while (!is_op(close)) {
    if (!expr->items.empty()) expect_op(",");
    if (is_op(close)) break;
    expr->items.push_back(parse_expression());
    if (kind == ExprKind::Dict) {
      expect_op(":");
      expr->items.push_back(parse_expression());
    }
  }
  ++pos_;
  return sealed(std::move(expr));
}

ExprPtr Parser::parse_postfix(ExprPtr expr) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      expr = parse_subscript(std::move(expr));
    } else if (is_op("(")) {
      auto call = node(ExprKind::Call, current().line);
      call->a = std::move(expr);
      parse_call_args(*call);
      expr = sealed(std::move(call));
    } else {
      return expr;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr expr) {
  while (true) {
    if (skip_op("|")) {
      expr = parse_filter(std::move(expr), false);
    } else if (is_name("is")) {
      expr = parse_test(std::move(expr));
    } else if (is_op("(")) {
      auto call = node(ExprKind::Call, current().line);
      call->a = std::move(expr);
      parse_call_args(*call);
      expr = sealed(std::move(call));
    } else {
      return expr;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr expr) {
  const int line = current().line;
  if (skip_op(".")) {
    if (current().type == Tok::Int) {
      auto item = node(ExprKind::Getitem, line);
      auto index = node(ExprKind::Const, line);
      index->constant = Value::integer(tokens_[pos_++].int_value);
      item->a = std::move(expr);
      item->b = std::move(index);
      return sealed(std::move(item));
    }
    auto attr = node(ExprKind::Getattr, line);
    attr->name = expect_name("an attribute name after '.'");
    attr->a = std::move(expr);
    return sealed(std::move(attr));
  }
  expect_op("[");
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    if (is_op("]")) break;
    args.push_back(parse_subscribed());
  }
  ++pos_;
  if (args.empty()) throw TemplateFailure{"subscript '[]' needs an index", line};
  auto item = node(ExprKind::Getitem, line);
  item->a = std::move(expr);
  if (args.size() == 1) {
    item->b = std::move(args.front());
  } else {
    item->b = node(ExprKind::Tuple, line);
    item->b->items = std::move(args);
    seal(*item->b);
  }
  return sealed(std::move(item));
}

ExprPtr Parser::parse_subscribed() {
  const int line = current().line;
  ExprPtr start;
  if (!is_op(":")) {
    start = parse_expression();
    if (!is_op(":")) return start;
  }
  ++pos_;
  auto slice = node(ExprKind::Slice, line);
  slice->a = std::move(start);
  if (!is_op(":") && !is_op("]") && !is_op(",")) slice->b = parse_expression();
  if (skip_op(":") && !is_op("]") && !is_op(",")) slice->c = parse_expression();
  return sealed(std::move(slice));
}

void Parser::parse_call_args(Expr& call) {
  expect_op("(");
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      expect_op(",");
      if (is_op(")")) break;
    }
    first = false;
    if (skip_op("*")) {
      if (call.star || call.star_star) fail_here("a call takes at most one '*' argument, before any '**'");
      call.star = parse_expression();
    } else if (skip_op("**")) {
      if (call.star_star) fail_here("a call takes at most one '**' argument");
      call.star_star = parse_expression();
    } else if (current().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
      std::string key = tokens_[pos_].text;
      pos_ += 2;
      call.keywords.emplace_back(std::move(key), parse_expression());
    } else {
      if (!call.keywords.empty() || call.star || call.star_star)
        fail_here("positional argument follows a keyword argument");
      call.items.push_back(parse_expression());
    }
  }
  ++pos_;
}

std::string Parser::parse_dotted_name() {
  std::string name = expect_name("a filter or test name");
  while (is_op(".") && peek().type == Tok::Name) {
    ++pos_;
    name += "." + tokens_[pos_++].text;
  }
  return name;
}

ExprPtr Parser::parse_filter(ExprPtr operand, bool start_inline) {
  // One filter after a '|'; a filter block or set block names its first filter without one, then chains more.
  do {
    auto filter = node(ExprKind::Filter, current().line);
    filter->name = parse_dotted_name();
    if (is_op("(")) parse_call_args(*filter);
    filter->a = std::move(operand);
    operand = sealed(std::move(filter));
  } while (start_inline && skip_op("|"));
  return operand;
}

ExprPtr Parser::parse_test(ExprPtr operand) {
  auto test = node(ExprKind::Test, current().line);
  ++pos_;  // 'is'
  test->negated = skip_name("not");
  test->name = parse_dotted_name();
  const Token& next = current();
  // As Jinja: a bare argument is a name, literal or bracket that does not start `else`, `or` or `and`.
  if (next.type == Tok::Name && next.text == "is") fail_here("tests cannot be chained with a second 'is'");
  const bool bare_argument =
      next.type == Tok::String || next.type == Tok::Int || next.type == Tok::Float ||
      (next.type == Tok::Op && (next.text == "[" || next.text == "{")) ||
      (next.type == Tok::Name && next.text != "else" && next.text != "or" && next.text != "and");
  if (is_op("(")) {
    parse_call_args(*test);
  } else if (bare_argument) {
    test->items.push_back(parse_postfix(parse_primary()));
  }
  test->a = std::move(operand);
  return sealed(std::move(test));
}

}  // namespace plumb::text::jinja
