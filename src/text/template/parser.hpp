#pragma once
// Recursive-descent parser for the Jinja subset, with Jinja's operator precedence.
#include <string_view>
#include <vector>

#include "text/template/ast.hpp"
#include "text/template/lexer.hpp"

namespace plumb::text::jinja {

// Deepest nesting of expressions and blocks a template may have.
inline constexpr int kMaxNesting = 128;

// Throws TemplateFailure (with the line set) on a syntax error or an unknown filter or test.
Program parse_program(std::string_view source);

// Refuses filters and tests that do not exist, outside the if-blocks where Jinja defers that error
// (validate.cpp).
void check_names(const Program& program);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Program parse();

 private:
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<Stmt*> macros_;  // macros being parsed, innermost last

  // Token helpers.
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(std::size_t ahead = 1) const;
  bool is_op(std::string_view op) const { return current().type == Tok::Op && current().text == op; }
  bool is_name(std::string_view name) const { return current().type == Tok::Name && current().text == name; }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  std::string expect_name(std::string_view what);
  void expect_block_end(std::string_view tag);
  void expect_body_start(std::string_view tag);
  [[noreturn]] void fail_here(const std::string& message) const;
  ExprPtr node(ExprKind kind, int line) const;

  // Statements.
  Body parse_statements(const std::vector<std::string_view>& end_names, std::string_view opener,
                        int open_line);
  StmtPtr parse_tag();
  StmtPtr parse_if(int line);
  StmtPtr parse_for(int line);
  StmtPtr parse_set(int line);
  StmtPtr parse_macro(int line);
  StmtPtr parse_call_block(int line);
  StmtPtr parse_filter_block(int line);
  StmtPtr parse_scope(int line, std::string_view tag);
  void parse_signature(Stmt& stmt);
  ExprPtr parse_assign_target(bool with_namespace, const std::vector<std::string_view>& end_names);

  // Expressions, lowest precedence first.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens,
                      const std::vector<std::string_view>& end_names = {});
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_collection(std::string_view close, ExprKind kind);
  ExprPtr parse_postfix(ExprPtr expr);
  ExprPtr parse_filter_expr(ExprPtr expr);
  ExprPtr parse_subscript(ExprPtr expr);
  ExprPtr parse_subscribed();
  void parse_call_args(Expr& call);
  ExprPtr parse_filter(ExprPtr operand, bool start_inline);
  ExprPtr parse_test(ExprPtr operand);
  std::string parse_dotted_name();
};

}  // namespace plumb::text::jinja
