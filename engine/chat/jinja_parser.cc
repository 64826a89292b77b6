// The template's structure (text, {{ output }}, tags) and its statements: if, for, set, macro, call, filter, with,
// break / continue, generation; expressions are parsed in jinja_expression_parser.cc.
#include "engine/chat/jinja_parser.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_lexer.h"
#include "engine/chat/jinja_parser_state.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace parsing {

absl::StatusOr<Body> Parser::ParseBody(std::initializer_list<const char*> end_tags, std::string* end_tag) {
  DepthGuard guard(depth_);
  ARACH_RETURN_IF_ERROR(CheckDepth());
  Body body;
  while (true) {
    const Token& t = Peek();
    if (t.type == Type::kEnd) {
      if (end_tags.size() == 0) return body;
      return ErrorAt(t, absl::StrCat("the template ends before {% ", *end_tags.begin(), " %}"));
    }
    if (t.type == Type::kText) {
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::kText;
      s->at = At(t);
      s->text = t.value;
      body.push_back(std::move(s));
      Next();
      continue;
    }
    if (t.type == Type::kVariableBegin) {
      Next();
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::kOutput;
      s->at = At(t);
      ARACH_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
      ARACH_RETURN_IF_ERROR(Expect(Type::kVariableEnd, nullptr, "'}}'"));
      body.push_back(std::move(s));
      continue;
    }
    if (t.type != Type::kBlockBegin) return ErrorAt(t, absl::StrCat("unexpected ", Describe(t)));
    const Token& name = Peek(1);
    if (name.type != Type::kName) return ErrorAt(name, absl::StrCat("expected a tag name, found ", Describe(name)));
    for (const char* end : end_tags) {
      if (name.value == end) {
        Next();
        Next();
        *end_tag = end;
        return body;
      }
    }
    Next();
    ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> s, ParseStatement());
    if (s != nullptr) body.push_back(std::move(s));
  }
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseStatement() {
  const Token& name = Next();
  const std::string& tag = name.value;
  if (tag == "if") return ParseIf(name);
  if (tag == "for") return ParseFor(name);
  if (tag == "set") return ParseSet(name);
  if (tag == "macro") return ParseMacro(name);
  if (tag == "call") return ParseCallBlock(name);
  if (tag == "filter") return ParseFilterBlock(name);
  if (tag == "with") return ParseWith(name);
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return ErrorAt(name, absl::StrCat("'", tag, "' outside a for loop"));
    auto s = std::make_unique<Stmt>();
    s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
    s->at = At(name);
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (tag == "generation") {  // transformers' assistant-mask marker: renders its body
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string end;
    ARACH_ASSIGN_OR_RETURN(Body body, ParseBody({"endgeneration"}, &end));
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    auto s = std::make_unique<Stmt>();
    s->kind = Stmt::Kind::kIf;  // an always-true branch: the body in the current scope
    s->at = At(name);
    auto always = std::make_unique<Expr>();
    always->kind = Expr::Kind::kLiteral;
    always->value = Value::Bool(true);
    s->branches.emplace_back(std::move(always), std::move(body));
    return s;
  }
  return ErrorAt(name, absl::StrCat("unsupported tag '", tag, "'"));
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseIf(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kIf;
  s->at = At(tag);
  while (true) {
    ARACH_ASSIGN_OR_RETURN(ExprPtr condition, ParseTuple(true));
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string end;
    ARACH_ASSIGN_OR_RETURN(Body body, ParseBody({"elif", "else", "endif"}, &end));
    s->branches.emplace_back(std::move(condition), std::move(body));
    if (end == "elif") continue;
    if (end == "else") {
      ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
      ARACH_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endif"}, &end));
    }
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
}

absl::StatusOr<Target> Parser::ParseTarget(bool allow_attribute) {
  Target target;
  const bool parenthesized = IsOp("(");
  if (parenthesized) Next();
  ARACH_ASSIGN_OR_RETURN(std::string first, ExpectName("a variable name"));
  target.names.push_back(first);
  if (allow_attribute && IsOp(".")) {
    Next();
    ARACH_ASSIGN_OR_RETURN(target.attribute, ExpectName("an attribute name"));
    return target;
  }
  while (IsOp(",")) {
    Next();
    if (parenthesized && IsOp(")")) break;
    ARACH_ASSIGN_OR_RETURN(std::string more, ExpectName("a variable name"));
    target.names.push_back(more);
  }
  if (parenthesized) ARACH_RETURN_IF_ERROR(ExpectOp(")"));
  return target;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseFor(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kFor;
  s->at = At(tag);
  ARACH_ASSIGN_OR_RETURN(s->target, ParseTarget(false));
  ARACH_RETURN_IF_ERROR(Expect(Type::kName, "in", "'in'"));
  ARACH_ASSIGN_OR_RETURN(s->expr, ParseTuple(false));
  if (IsName("if")) {
    Next();
    ARACH_ASSIGN_OR_RETURN(s->condition, ParseExpression(true));
  }
  if (IsName("recursive")) {
    Next();
    s->recursive = true;
  }
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  ++loop_depth_;
  std::string end;
  absl::StatusOr<Body> body = ParseBody({"else", "endfor"}, &end);
  --loop_depth_;
  if (!body.ok()) return body.status();
  s->body = std::move(*body);
  s->reads_loop = ReadsName(s->body, "loop");
  if (end == "else") {
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    ARACH_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endfor"}, &end));
  }
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseSet(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->at = At(tag);
  ARACH_ASSIGN_OR_RETURN(s->target, ParseTarget(true));
  if (IsOp("=")) {
    Next();
    s->kind = Stmt::Kind::kSet;
    ARACH_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (s->target.names.size() != 1 || !s->target.attribute.empty()) {
    return ErrorAt(Peek(), "a block set assigns one plain name");
  }
  if (IsOp("|")) return ErrorAt(Peek(), "unsupported: filters on a block set");
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  s->kind = Stmt::Kind::kSetBlock;
  std::string end;
  ARACH_ASSIGN_OR_RETURN(s->body, ParseBody({"endset"}, &end));
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

absl::Status Parser::ParseParams(std::vector<MacroParam>* params) {
  ARACH_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    MacroParam param;
    ARACH_ASSIGN_OR_RETURN(param.name, ExpectName("a parameter name"));
    if (IsOp("=")) {
      Next();
      ARACH_ASSIGN_OR_RETURN(param.default_value, ParseExpression(true));
    } else if (!params->empty() && params->back().default_value != nullptr) {
      return ErrorAt(Peek(), "a parameter without a default follows one with a default");
    }
    params->push_back(std::move(param));
    if (!IsOp(")")) ARACH_RETURN_IF_ERROR(ExpectOp(","));
  }
  Next();
  return absl::OkStatus();
}

absl::StatusOr<Body> Parser::ParseOwnBody(const char* end_tag) {
  const int outer_loops = loop_depth_;
  loop_depth_ = 0;
  std::string end;
  absl::StatusOr<Body> body = ParseBody({end_tag}, &end);
  loop_depth_ = outer_loops;
  if (!body.ok()) return body.status();
  if (std::string_view(end_tag) == "endmacro" && Peek().type == Type::kName) Next();  // {% endmacro name %}
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  return body;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseMacro(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kMacro;
  s->at = At(tag);
  ARACH_ASSIGN_OR_RETURN(s->text, ExpectName("the macro's name"));
  ARACH_RETURN_IF_ERROR(ParseParams(&s->params));
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  ARACH_ASSIGN_OR_RETURN(s->body, ParseOwnBody("endmacro"));
  const auto declares = [&s](std::string_view name) {
    return std::any_of(s->params.begin(), s->params.end(), [name](const MacroParam& p) { return p.name == name; });
  };
  s->catches_varargs = !declares("varargs") && ReadsName(s->body, "varargs");
  s->catches_kwargs = !declares("kwargs") && ReadsName(s->body, "kwargs");
  return s;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseCallBlock(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kCallBlock;
  s->at = At(tag);
  s->text = "caller";
  if (IsOp("(")) ARACH_RETURN_IF_ERROR(ParseParams(&s->params));
  const Token& start = Peek();
  ARACH_ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
  if (s->expr->kind != Expr::Kind::kCall) return ErrorAt(start, "a call block needs a call (macro(args))");
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  ARACH_ASSIGN_OR_RETURN(s->body, ParseOwnBody("endcall"));
  return s;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseFilterBlock(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kFilterBlock;
  s->at = At(tag);
  ExprPtr node = Make(Expr::Kind::kName, At(tag));
  node->name = kFilterOperand;
  ARACH_ASSIGN_OR_RETURN(node, ParseFilterApplication(std::move(node)));
  while (IsOp("|")) {
    Next();
    ARACH_ASSIGN_OR_RETURN(node, ParseFilterApplication(std::move(node)));
  }
  s->expr = std::move(node);
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  ARACH_ASSIGN_OR_RETURN(s->body, ParseOwnBody("endfilter"));
  return s;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseWith(const Token& tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = Stmt::Kind::kWith;
  s->at = At(tag);
  while (Peek().type != Type::kBlockEnd) {
    if (!s->assignments.empty()) ARACH_RETURN_IF_ERROR(ExpectOp(","));
    ARACH_ASSIGN_OR_RETURN(Target target, ParseTarget(false));
    ARACH_RETURN_IF_ERROR(ExpectOp("="));
    ARACH_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
    s->assignments.emplace_back(std::move(target), std::move(value));
  }
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  ARACH_ASSIGN_OR_RETURN(s->body, ParseBody({"endwith"}, &end));
  ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

}  // namespace parsing

absl::StatusOr<Template> ParseTemplate(std::string_view source) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return parsing::Parser(std::move(tokens)).Run();
}

}  // namespace arach::jinja
