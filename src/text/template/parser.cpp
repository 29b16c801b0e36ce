// Statements: text, output, if/elif/else, for/else, set (plain, block, namespace attribute), macro, call,
// filter, with, generation, break, continue.
#include "text/template/parser.hpp"

#include <algorithm>

namespace plumb::text::jinja {

namespace {
// Raises the nesting counter for the lifetime of a parse step and refuses templates nested too deeply.
struct NestingGuard {
  int& depth;
  NestingGuard(int& counter, int line) : depth(counter) {
    if (++depth > kMaxNesting)
      throw TemplateFailure{"template nests expressions or blocks too deeply; expected at most " +
                                std::to_string(kMaxNesting) + " levels",
                            line};
  }
  ~NestingGuard() { --depth; }
};
}  // namespace

Program parse_program(std::string_view source) {
  Program program = Parser(tokenize(source)).parse();
  check_names(program);
  return program;
}

const Token& Parser::peek(std::size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

bool Parser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  ++pos_;
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!is_name(name)) return false;
  ++pos_;
  return true;
}

void Parser::fail_here(const std::string& message) const {
  throw TemplateFailure{message, current().line};
}

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) fail_here("expected '" + std::string(op) + "', got " + describe(current()));
}

std::string Parser::expect_name(std::string_view what) {
  if (current().type != Tok::Name)
    fail_here("expected " + std::string(what) + ", got " + describe(current()));
  return tokens_[pos_++].text;
}

void Parser::expect_body_start(std::string_view tag) {
  skip_op(":");  // Jinja accepts a Python-style colon before a block's body: {% if x: %}
  expect_block_end(tag);
}

void Parser::expect_block_end(std::string_view tag) {
  if (current().type != Tok::BlockEnd)
    fail_here("tag '" + std::string(tag) + "' has extra input; expected '%}', got " + describe(current()));
  ++pos_;
}

ExprPtr Parser::node(ExprKind kind, int line) const {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = line;
  return expr;
}

Program Parser::parse() {
  Program program;
  program.body = parse_statements({}, "", 1);
  return program;
}

Body Parser::parse_statements(const std::vector<std::string_view>& end_names, std::string_view opener,
                              int open_line) {
  Body body;
  while (true) {
    const Token& token = current();
    if (token.type == Tok::End) {
      if (end_names.empty()) return body;
      const auto closer = std::find_if(end_names.begin(), end_names.end(),
                                       [](std::string_view name) { return name.substr(0, 3) == "end"; });
      throw TemplateFailure{"tag '" + std::string(opener) + "' opened on line " + std::to_string(open_line) +
                                " is not closed; expected '" + std::string(*closer) +
                                "' before the end of the template",
                            token.line};
    }
    if (token.type == Tok::Text) {
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = StmtKind::Text;
      stmt->line = token.line;
      stmt->text = token.text;
      body.push_back(std::move(stmt));
      ++pos_;
    } else if (token.type == Tok::VarBegin) {
      auto stmt = std::make_unique<Stmt>();
      stmt->kind = StmtKind::Output;
      stmt->line = token.line;
      ++pos_;
      stmt->expr = parse_tuple(true, false);
      if (current().type != Tok::VarEnd) fail_here("expected '}}', got " + describe(current()));
      ++pos_;
      body.push_back(std::move(stmt));
    } else if (token.type == Tok::BlockBegin) {
      const Token& name = peek();
      if (name.type == Tok::Name &&
          std::find(end_names.begin(), end_names.end(), name.text) != end_names.end())
        return body;
      ++pos_;
      body.push_back(parse_tag());
    } else {
      fail_here("unexpected " + describe(token));
    }
  }
}

StmtPtr Parser::parse_tag() {
  const int line = current().line;
  NestingGuard guard(depth_, line);
  if (current().type != Tok::Name) fail_here("expected a tag name after '{%', got " + describe(current()));
  const std::string tag = tokens_[pos_++].text;
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "call") return parse_call_block(line);
  if (tag == "filter") return parse_filter_block(line);
  if (tag == "with" || tag == "generation") return parse_scope(line, tag);
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0)
      throw TemplateFailure{"tag '" + tag + "' is outside a loop; expected it inside 'for'", line};
    expect_block_end(tag);
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
    stmt->line = line;
    return stmt;
  }
  static const std::vector<std::string_view> unsupported = {"extends", "block", "include",    "import",
                                                            "from",    "do",    "autoescape", "trans"};
  if (std::find(unsupported.begin(), unsupported.end(), tag) != unsupported.end())
    throw TemplateFailure{"tag '" + tag + "' is not supported in chat templates", line};
  throw TemplateFailure{"tag '" + tag + "' is unknown or out of place", line};
}

StmtPtr Parser::parse_if(int line) {
  NestingGuard guard(depth_, line);  // each elif nests one If in the previous one
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::If;
  stmt->line = line;
  stmt->expr = parse_tuple(false, false);
  expect_body_start("if");
  stmt->body = parse_statements({"elif", "else", "endif"}, "if", line);
  ++pos_;  // '{%'
  const std::string next = tokens_[pos_++].text;
  const int next_line = current().line;
  if (next == "elif") {
    stmt->else_body.push_back(parse_if(next_line));
    return stmt;
  }
  if (next == "else") {
    expect_body_start("else");
    stmt->else_body = parse_statements({"endif"}, "if", line);
    pos_ += 2;
  }
  expect_block_end("endif");
  return stmt;
}

StmtPtr Parser::parse_for(int line) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::For;
  stmt->line = line;
  stmt->target = parse_assign_target(false, {"in"});
  if (!skip_name("in")) fail_here("tag 'for' needs 'in' after its target; got " + describe(current()));
  stmt->expr = parse_tuple(false, false, {"recursive"});
  if (skip_name("if")) stmt->loop_filter = parse_expression();
  if (is_name("recursive")) fail_here("recursive loops are not supported");
  expect_body_start("for");
  ++loop_depth_;
  stmt->body = parse_statements({"endfor", "else"}, "for", line);
  --loop_depth_;
  ++pos_;
  if (tokens_[pos_++].text == "else") {
    expect_body_start("else");
    stmt->else_body = parse_statements({"endfor"}, "for", line);
    pos_ += 2;
  }
  expect_block_end("endfor");
  return stmt;
}

StmtPtr Parser::parse_set(int line) {
  auto stmt = std::make_unique<Stmt>();
  stmt->line = line;
  stmt->target = parse_assign_target(true, {});
  if (skip_op("=")) {
    stmt->kind = StmtKind::Set;
    stmt->expr = parse_tuple(true, false);
    expect_block_end("set");
    return stmt;
  }
  stmt->kind = StmtKind::SetBlock;
  if (is_op("|")) {
    ++pos_;
    stmt->expr = parse_filter(nullptr, true);
  }
  expect_body_start("set");
  stmt->body = parse_statements({"endset"}, "set", line);
  pos_ += 2;
  expect_block_end("endset");
  return stmt;
}

void Parser::parse_signature(Stmt& stmt) {
  expect_op("(");
  while (!is_op(")")) {
    if (!stmt.params.empty()) expect_op(",");
    if (is_op(")")) break;
    Param param;
    param.name = expect_name("a parameter name");
    for (const Param& seen : stmt.params)
      if (seen.name == param.name) fail_here("parameter '" + param.name + "' is declared twice");
    if (skip_op("=")) {
      param.default_value = parse_expression();
    } else if (!stmt.params.empty() && stmt.params.back().default_value) {
      fail_here("parameter '" + param.name + "' has no default but follows one that does");
    }
    stmt.params.push_back(std::move(param));
  }
  ++pos_;
}

StmtPtr Parser::parse_macro(int line) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::Macro;
  stmt->line = line;
  stmt->name = expect_name("a macro name");
  parse_signature(*stmt);
  expect_body_start("macro");
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  macros_.push_back(stmt.get());
  stmt->body = parse_statements({"endmacro"}, "macro", line);
  macros_.pop_back();
  loop_depth_ = saved_loops;
  pos_ += 2;
  expect_block_end("endmacro");
  return stmt;
}

StmtPtr Parser::parse_call_block(int line) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::CallBlock;
  stmt->line = line;
  if (is_op("(")) parse_signature(*stmt);
  stmt->expr = parse_expression();
  if (stmt->expr->kind != ExprKind::Call) throw TemplateFailure{"tag 'call' needs a macro call", line};
  expect_body_start("call");
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  macros_.push_back(stmt.get());
  stmt->body = parse_statements({"endcall"}, "call", line);
  macros_.pop_back();
  loop_depth_ = saved_loops;
  pos_ += 2;
  expect_block_end("endcall");
  return stmt;
}

StmtPtr Parser::parse_filter_block(int line) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::FilterBlock;
  stmt->line = line;
  stmt->expr = parse_filter(nullptr, true);
  expect_body_start("filter");
  stmt->body = parse_statements({"endfilter"}, "filter", line);
  pos_ += 2;
  expect_block_end("endfilter");
  return stmt;
}

StmtPtr Parser::parse_scope(int line, std::string_view tag) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = StmtKind::Scope;
  stmt->line = line;
  // {% with a = 1, b = 2 %} binds names for its body; {% generation %} (Hugging Face's tag) only marks text.
  while (tag == "with" && current().type != Tok::BlockEnd) {
    if (!stmt->params.empty()) expect_op(",");
    Param param;
    param.name = expect_name("a name");
    expect_op("=");
    param.default_value = parse_expression();
    stmt->params.push_back(std::move(param));
  }
  expect_body_start(tag);
  const std::string end = "end" + std::string(tag);
  stmt->body = parse_statements({end}, tag, line);
  pos_ += 2;
  expect_block_end(end);
  return stmt;
}

ExprPtr Parser::parse_assign_target(bool with_namespace, const std::vector<std::string_view>& end_names) {
  const int line = current().line;
  NestingGuard guard(depth_, line);
  if (with_namespace && current().type == Tok::Name && peek().type == Tok::Op && peek().text == ".") {
    auto target = node(ExprKind::Getattr, line);
    auto object = node(ExprKind::Name, line);
    object->name = tokens_[pos_].text;
    pos_ += 2;
    target->name = expect_name("an attribute name");
    target->a = std::move(object);
    return target;
  }
  // Names and (possibly parenthesized) tuples of names, as Jinja's simplified tuple.
  std::vector<ExprPtr> names;
  bool is_tuple = false;
  while (true) {
    if (!names.empty()) expect_op(",");
    if (current().type == Tok::BlockEnd ||
        (current().type == Tok::Name &&
         std::find(end_names.begin(), end_names.end(), current().text) != end_names.end()) ||
        is_op("="))
      break;
    if (is_op("(")) {
      ++pos_;
      names.push_back(parse_assign_target(false, {}));
      expect_op(")");
    } else {
      auto name = node(ExprKind::Name, current().line);
      name->name = expect_name("a name to assign to");
      if (name->name == "true" || name->name == "false" || name->name == "none" || name->name == "True" ||
          name->name == "False" || name->name == "None")
        fail_here("cannot assign to constant '" + name->name + "'");
      names.push_back(std::move(name));
    }
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (names.empty()) fail_here("expected a name to assign to, got " + describe(current()));
  if (!is_tuple) return std::move(names.front());
  auto tuple = node(ExprKind::Tuple, line);
  tuple->items = std::move(names);
  seal(*tuple);
  return tuple;
}

}  // namespace plumb::text::jinja
