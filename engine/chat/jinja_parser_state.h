// The Jinja parser's state, shared by its two halves: the template's structure and its statements
// (jinja_parser.cc), and expressions with Jinja2's operator precedence (jinja_expression_parser.cc). Internal to
// engine/chat: the entry point is ParseTemplate (jinja_parser.h).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_lexer.h"
#include "engine/core/status.h"

namespace arach::jinja::parsing {

inline constexpr int kMaxDepth = 200;  // nesting of expressions and blocks (bounded recursion)

// A recursive-descent parser over a template's tokens, one per template.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<Template> Run() {
    Template t;
    std::string end_tag;
    ARACH_ASSIGN_OR_RETURN(t.body, ParseBody({}, &end_tag));
    return t;
  }

 private:
  using Type = Token::Type;

  const Token& Peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsOp(const char* op, size_t ahead = 0) const { return Peek(ahead).type == Type::kOperator && Peek(ahead).value == op; }
  bool IsName(const char* name, size_t ahead = 0) const { return Peek(ahead).type == Type::kName && Peek(ahead).value == name; }
  static Position At(const Token& t) { return {t.line, t.column}; }

  absl::Status ErrorAt(const Token& t, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrFormat("line %d, column %d: %s", t.line, t.column, what));
  }
  static std::string Describe(const Token& t) {
    switch (t.type) {
      case Type::kEnd: return "the end of the template";
      case Type::kBlockEnd: return "'%}'";
      case Type::kVariableEnd: return "'}}'";
      case Type::kText: return "text";
      case Type::kString: return "a string";
      default: return absl::StrCat("'", t.value, "'");
    }
  }
  absl::Status Expect(Type type, const char* value, const char* what) {
    const Token& t = Peek();
    if (t.type != type || (value != nullptr && t.value != value)) {
      return ErrorAt(t, absl::StrCat("expected ", what, ", found ", Describe(t)));
    }
    Next();
    return absl::OkStatus();
  }
  absl::Status ExpectOp(const char* op) { return Expect(Type::kOperator, op, absl::StrCat("'", op, "'").c_str()); }
  absl::Status ExpectBlockEnd() { return Expect(Type::kBlockEnd, nullptr, "'%}'"); }
  absl::StatusOr<std::string> ExpectName(const char* what) {
    const Token& t = Peek();
    if (t.type != Type::kName) return ErrorAt(t, absl::StrCat("expected ", what, ", found ", Describe(t)));
    Next();
    return t.value;
  }

  struct DepthGuard {
    explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }
    int& depth_;
  };
  absl::Status CheckDepth() const {
    if (depth_ > kMaxDepth) return ErrorAt(Peek(), "the template nests too deeply");
    return absl::OkStatus();
  }

  // Statements and the template's structure (jinja_parser.cc).

  // Statements until one of `end_tags` (its name goes to *end_tag, the tag's "{%" and name consumed) or the end.
  absl::StatusOr<Body> ParseBody(std::initializer_list<const char*> end_tags, std::string* end_tag);

  // After "{%": the tag's name and the rest of the statement.
  absl::StatusOr<std::unique_ptr<Stmt>> ParseStatement();
  absl::StatusOr<std::unique_ptr<Stmt>> ParseIf(const Token& tag);

  // NAME | NAME, NAME... | (NAME, NAME); with `allow_attribute`, also NAME.ATTR.
  absl::StatusOr<Target> ParseTarget(bool allow_attribute);
  absl::StatusOr<std::unique_ptr<Stmt>> ParseFor(const Token& tag);
  absl::StatusOr<std::unique_ptr<Stmt>> ParseSet(const Token& tag);

  // "(" NAME [= default], ... ")" of a macro or a call block's caller.
  absl::Status ParseParams(std::vector<MacroParam>* params);

  // A body of its own, like a macro's: break/continue do not cross it. Consumes the end tag and its "%}".
  absl::StatusOr<Body> ParseOwnBody(const char* end_tag);
  absl::StatusOr<std::unique_ptr<Stmt>> ParseMacro(const Token& tag);

  // {% call [(params)] callee(args) %}: the body becomes the `caller` the callee's body may call.
  absl::StatusOr<std::unique_ptr<Stmt>> ParseCallBlock(const Token& tag);

  // {% filter name[(args)] [| name[(args)]]... %}
  absl::StatusOr<std::unique_ptr<Stmt>> ParseFilterBlock(const Token& tag);

  // {% with [target = value, ...] %}: the values are evaluated outside, the names bound inside.
  absl::StatusOr<std::unique_ptr<Stmt>> ParseWith(const Token& tag);

  // Expressions (jinja_expression_parser.cc), lowest precedence first.

  static ExprPtr Make(Expr::Kind kind, Position at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    return e;
  }

  // An expression, or several separated by commas (a tuple).
  absl::StatusOr<ExprPtr> ParseTuple(bool with_conditional);
  absl::StatusOr<ExprPtr> ParseExpression(bool with_conditional);
  absl::StatusOr<ExprPtr> Binary(const std::string& op, ExprPtr lhs, ExprPtr rhs, Position at);
  absl::StatusOr<ExprPtr> ParseOr();
  absl::StatusOr<ExprPtr> ParseAnd();
  absl::StatusOr<ExprPtr> ParseNot();
  absl::StatusOr<ExprPtr> ParseCompare();
  absl::StatusOr<ExprPtr> ParseMath1();
  absl::StatusOr<ExprPtr> ParseConcat();
  absl::StatusOr<ExprPtr> ParseMath2();
  absl::StatusOr<ExprPtr> ParsePow();
  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);
  absl::StatusOr<ExprPtr> ParsePrimary();
  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node);

  // "(" args ")" into `call` (its items[0] already set when it is a call).
  absl::Status ParseArguments(Expr* call);
  absl::StatusOr<ExprPtr> ParseCall(ExprPtr callee);

  // After "|": NAME [(args)] applied to `node`.
  absl::StatusOr<ExprPtr> ParseFilterApplication(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseFilters(ExprPtr node);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace arach::jinja::parsing
