// Unknown filters and tests are refused when the template is parsed, as Jinja's compiler refuses them, except
// inside an if-statement or inline if-expression, where Jinja defers the error to the moment they are used.
#include "text/template/filters.hpp"
#include "text/template/parser.hpp"

namespace plumb::text::jinja {

namespace {

void check_expr(const Expr& expr, bool deferred);

void check_children(const Expr& expr, bool deferred) {
  for (const ExprPtr* child : {&expr.a, &expr.b, &expr.c, &expr.star, &expr.star_star})
    if (*child) check_expr(**child, deferred);
  for (const ExprPtr& item : expr.items) check_expr(*item, deferred);
  for (const auto& keyword : expr.keywords) check_expr(*keyword.second, deferred);
}

void check_expr(const Expr& expr, bool deferred) {
  if (!deferred) {
    if (expr.kind == ExprKind::Filter && !find_filter(expr.name))
      throw TemplateFailure{"filter '" + expr.name + "' is unknown", expr.line};
    if (expr.kind == ExprKind::Test && !find_test(expr.name))
      throw TemplateFailure{"test '" + expr.name + "' is unknown", expr.line};
  }
  check_children(expr, deferred || expr.kind == ExprKind::Cond);
}

void check_body(const Body& body, bool deferred);

void check_stmt(const Stmt& stmt, bool deferred) {
  auto check = [](const ExprPtr& expr, bool soft) {
    if (expr) check_expr(*expr, soft);
  };
  switch (stmt.kind) {
    case StmtKind::If:
      check(stmt.expr, true);
      check_body(stmt.body, true);
      check_body(stmt.else_body, true);
      return;
    case StmtKind::For:
      // The iterable belongs to the enclosing frame; the loop's own frame is a fresh one.
      check(stmt.expr, deferred);
      check(stmt.loop_filter, false);
      check_body(stmt.body, false);
      check_body(stmt.else_body, false);
      return;
    case StmtKind::Macro:
    case StmtKind::CallBlock:
      for (const Param& param : stmt.params) check(param.default_value, false);
      check(stmt.expr, deferred);
      check_body(stmt.body, false);
      return;
    case StmtKind::Scope:
      for (const Param& binding : stmt.params) check(binding.default_value, deferred);
      check_body(stmt.body, false);
      return;
    case StmtKind::SetBlock:
    case StmtKind::FilterBlock:
      check(stmt.expr, false);
      check_body(stmt.body, false);
      return;
    default:
      check(stmt.expr, deferred);
      check(stmt.target, deferred);
      return;
  }
}

void check_body(const Body& body, bool deferred) {
  for (const StmtPtr& stmt : body) check_stmt(*stmt, deferred);
}

}  // namespace

void check_names(const Program& program) {
  check_body(program.body, false);
}

}  // namespace plumb::text::jinja
