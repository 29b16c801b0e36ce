#pragma once
// The parsed template: expression and statement nodes, each with the line it came from.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/template/value.hpp"

namespace plumb::text::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  Const,    // constant
  Name,     // name
  List,     // items
  Tuple,    // items
  Dict,     // items: key, value, key, value...
  Getattr,  // a.name
  Getitem,  // a[b]
  Slice,    // [a:b:c], any of them null
  Call,     // a(items, keywords, star, star_star)
  Filter,   // a | name(items, keywords); a is null in a filter block
  Test,     // a is [not] name(items, keywords); negated
  Neg,      // -a
  Pos,      // +a
  Not,      // not a
  And,      // a and b
  Or,       // a or b
  Binary,   // a op b (+ - * / // % ** ~)
  Compare,  // a op0 items[0] op1 items[1] ...
  Cond,     // b if a else c; c may be null
};

struct Expr {
  ExprKind kind = ExprKind::Const;
  int line = 1;
  Value constant;
  std::string name;  // variable, attribute, filter or test name, or binary operator
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;  // Compare operators
  ExprPtr star, star_star;       // *args, **kwargs in a call
  bool negated = false;
  int depth = 1;  // height of this node's tree, bounded so evaluating and freeing it cannot exhaust the stack
};

// Tallest expression tree a template may build.
inline constexpr int kMaxExprDepth = 256;

// Sets `expr.depth` from its children; throws TemplateFailure when the tree is too tall.
void seal(Expr& expr);

enum class StmtKind {
  Text,
  Output,
  If,
  For,
  Set,
  SetBlock,
  Macro,
  CallBlock,
  FilterBlock,
  Scope,
  Break,
  Continue
};

struct Param {
  std::string name;
  ExprPtr default_value;
};

struct Stmt {
  StmtKind kind = StmtKind::Text;
  int line = 1;
  std::string text;  // Text
  std::string name;  // Macro name
  ExprPtr expr;      // Output, If test, For iterable, Set value, CallBlock call, FilterBlock/SetBlock filter
  ExprPtr target;    // For and Set targets
  ExprPtr loop_filter;  // for x in y if loop_filter
  Body body;
  Body else_body;  // If else (elif is a nested If), For else
  std::vector<Param> params;
  // Whether the body reads these names: macros only accept extra arguments then, as Jinja's do.
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

struct Program {
  Body body;
};

}  // namespace plumb::text::jinja
