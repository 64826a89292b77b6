#include "engine/chat/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_lexer.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {

constexpr int kMaxDepth = 200;  // nesting of expressions and blocks (bounded recursion)

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

  // Statements until one of `end_tags` (its name goes to *end_tag, the tag's "{%" and name consumed) or the end.
  absl::StatusOr<Body> ParseBody(std::initializer_list<const char*> end_tags, std::string* end_tag) {
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

  // After "{%": the tag's name and the rest of the statement.
  absl::StatusOr<std::unique_ptr<Stmt>> ParseStatement() {
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

  absl::StatusOr<std::unique_ptr<Stmt>> ParseIf(const Token& tag) {
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

  // NAME | NAME, NAME... | (NAME, NAME); with `allow_attribute`, also NAME.ATTR.
  absl::StatusOr<Target> ParseTarget(bool allow_attribute) {
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

  absl::StatusOr<std::unique_ptr<Stmt>> ParseFor(const Token& tag) {
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
    if (IsName("recursive")) return ErrorAt(Peek(), "unsupported: recursive loops");
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    ++loop_depth_;
    std::string end;
    absl::StatusOr<Body> body = ParseBody({"else", "endfor"}, &end);
    --loop_depth_;
    if (!body.ok()) return body.status();
    s->body = std::move(*body);
    if (end == "else") {
      ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
      ARACH_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endfor"}, &end));
    }
    ARACH_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }

  absl::StatusOr<std::unique_ptr<Stmt>> ParseSet(const Token& tag) {
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

  // "(" NAME [= default], ... ")" of a macro or a call block's caller.
  absl::Status ParseParams(std::vector<MacroParam>* params) {
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

  // A body of its own, like a macro's: break/continue do not cross it. Consumes the end tag and its "%}".
  absl::StatusOr<Body> ParseOwnBody(const char* end_tag) {
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

  absl::StatusOr<std::unique_ptr<Stmt>> ParseMacro(const Token& tag) {
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

  // {% call [(params)] callee(args) %}: the body becomes the `caller` the callee's body may call.
  absl::StatusOr<std::unique_ptr<Stmt>> ParseCallBlock(const Token& tag) {
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

  // {% filter name[(args)] [| name[(args)]]... %}
  absl::StatusOr<std::unique_ptr<Stmt>> ParseFilterBlock(const Token& tag) {
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

  // {% with [target = value, ...] %}: the values are evaluated outside, the names bound inside.
  absl::StatusOr<std::unique_ptr<Stmt>> ParseWith(const Token& tag) {
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

  // ------------------------------------------------------------------ expressions

  static ExprPtr Make(Expr::Kind kind, Position at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    return e;
  }

  // An expression, or several separated by commas (a tuple).
  absl::StatusOr<ExprPtr> ParseTuple(bool with_conditional) {
    const Position at = At(Peek());
    ARACH_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression(with_conditional));
    if (!IsOp(",")) return first;
    ExprPtr tuple = Make(Expr::Kind::kTuple, at);
    tuple->items.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (Peek().type == Type::kBlockEnd || Peek().type == Type::kVariableEnd || IsOp(")")) break;
      ARACH_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(with_conditional));
      tuple->items.push_back(std::move(item));
    }
    return tuple;
  }

  absl::StatusOr<ExprPtr> ParseExpression(bool with_conditional) {
    DepthGuard guard(depth_);
    ARACH_RETURN_IF_ERROR(CheckDepth());
    ARACH_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (with_conditional && IsName("if")) {
      const Position at = At(Next());
      ExprPtr conditional = Make(Expr::Kind::kConditional, at);
      ARACH_ASSIGN_OR_RETURN(ExprPtr condition, ParseOr());
      ExprPtr otherwise;
      if (IsName("else")) {
        Next();
        ARACH_ASSIGN_OR_RETURN(otherwise, ParseExpression(true));
      }
      conditional->items.push_back(std::move(condition));
      conditional->items.push_back(std::move(expr));
      conditional->items.push_back(std::move(otherwise));
      expr = std::move(conditional);
    }
    return expr;
  }

  absl::StatusOr<ExprPtr> Binary(const std::string& op, ExprPtr lhs, ExprPtr rhs, Position at) {
    ExprPtr e = Make(Expr::Kind::kBinary, at);
    e->name = op;
    e->items.push_back(std::move(lhs));
    e->items.push_back(std::move(rhs));
    return e;
  }

  absl::StatusOr<ExprPtr> ParseOr() {
    ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseAnd());
    while (IsName("or")) {
      const Position at = At(Next());
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseAnd());
      ARACH_ASSIGN_OR_RETURN(lhs, Binary("or", std::move(lhs), std::move(rhs), at));
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseAnd() {
    ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseNot());
    while (IsName("and")) {
      const Position at = At(Next());
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseNot());
      ARACH_ASSIGN_OR_RETURN(lhs, Binary("and", std::move(lhs), std::move(rhs), at));
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(depth_);
      ARACH_RETURN_IF_ERROR(CheckDepth());
      const Position at = At(Next());
      ExprPtr e = Make(Expr::Kind::kNot, at);
      ARACH_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      e->items.push_back(std::move(operand));
      return e;
    }
    return ParseCompare();
  }

  absl::StatusOr<ExprPtr> ParseCompare() {
    const Position at = At(Peek());
    ARACH_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
    ExprPtr compare;
    while (true) {
      std::string op;
      if (Peek().type == Type::kOperator &&
          (Peek().value == "==" || Peek().value == "!=" || Peek().value == "<" || Peek().value == "<=" || Peek().value == ">" ||
           Peek().value == ">=")) {
        op = Next().value;
      } else if (IsName("in")) {
        Next();
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        op = "not in";
      } else {
        break;
      }
      if (compare == nullptr) {
        compare = Make(Expr::Kind::kCompare, at);
        compare->items.push_back(std::move(first));
      }
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath1());
      compare->ops.push_back(op);
      compare->items.push_back(std::move(rhs));
    }
    return compare != nullptr ? std::move(compare) : std::move(first);
  }

  absl::StatusOr<ExprPtr> ParseMath1() {
    ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const Token& op = Next();
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseConcat());
      ARACH_ASSIGN_OR_RETURN(lhs, Binary(op.value, std::move(lhs), std::move(rhs), At(op)));
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseConcat() {
    ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseMath2());
    while (IsOp("~")) {
      const Token& op = Next();
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath2());
      ARACH_ASSIGN_OR_RETURN(lhs, Binary("~", std::move(lhs), std::move(rhs), At(op)));
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseMath2() {
    ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& op = Next();
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParsePow());
      ARACH_ASSIGN_OR_RETURN(lhs, Binary(op.value, std::move(lhs), std::move(rhs), At(op)));
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParsePow() {
    ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseUnary(true));
    while (IsOp("**")) {
      const Token& op = Next();
      ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseUnary(true));
      ARACH_ASSIGN_OR_RETURN(lhs, Binary("**", std::move(lhs), std::move(rhs), At(op)));
    }
    return lhs;
  }

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    DepthGuard guard(depth_);
    ARACH_RETURN_IF_ERROR(CheckDepth());
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      const Token& op = Next();
      ARACH_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      if (op.value == "-") {
        node = Make(Expr::Kind::kNegate, At(op));
        node->items.push_back(std::move(operand));
      } else {
        node = std::move(operand);
      }
    } else {
      ARACH_ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    ARACH_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) {
      ARACH_ASSIGN_OR_RETURN(node, ParseFilters(std::move(node)));
    }
    return node;
  }

  absl::StatusOr<ExprPtr> ParsePrimary() {
    const Token& t = Peek();
    const Position at = At(t);
    switch (t.type) {
      case Type::kName: {
        Next();
        ExprPtr e = Make(Expr::Kind::kLiteral, at);
        if (t.value == "true" || t.value == "True") {
          e->value = Value::Bool(true);
        } else if (t.value == "false" || t.value == "False") {
          e->value = Value::Bool(false);
        } else if (t.value == "none" || t.value == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.value;
        }
        return e;
      }
      case Type::kString: {
        std::string text;
        while (Peek().type == Type::kString) text += Next().value;  // adjacent literals join
        ExprPtr e = Make(Expr::Kind::kLiteral, at);
        e->value = Value::String(std::move(text));
        return e;
      }
      case Type::kInteger: {
        Next();
        int64_t value = 0;
        const auto r = std::from_chars(t.value.data(), t.value.data() + t.value.size(), value);
        if (r.ec != std::errc()) return ErrorAt(t, absl::StrCat("the integer ", t.value, " is out of range"));
        ExprPtr e = Make(Expr::Kind::kLiteral, at);
        e->value = Value::Int(value);
        return e;
      }
      case Type::kFloat: {
        Next();
        ExprPtr e = Make(Expr::Kind::kLiteral, at);
        e->value = Value::Float(std::strtod(t.value.c_str(), nullptr));
        return e;
      }
      case Type::kOperator:
        if (t.value == "(") {
          Next();
          if (IsOp(")")) {  // the empty tuple
            Next();
            return Make(Expr::Kind::kTuple, at);
          }
          ARACH_ASSIGN_OR_RETURN(ExprPtr inner, ParseTuple(true));
          ARACH_RETURN_IF_ERROR(ExpectOp(")"));
          return inner;
        }
        if (t.value == "[") {
          Next();
          ExprPtr list = Make(Expr::Kind::kList, at);
          while (!IsOp("]")) {
            ARACH_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
            list->items.push_back(std::move(item));
            if (!IsOp("]")) ARACH_RETURN_IF_ERROR(ExpectOp(","));
          }
          Next();
          return list;
        }
        if (t.value == "{") {
          Next();
          ExprPtr dict = Make(Expr::Kind::kDict, at);
          while (!IsOp("}")) {
            ARACH_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
            ARACH_RETURN_IF_ERROR(ExpectOp(":"));
            ARACH_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
            dict->keys.push_back(std::move(key));
            dict->items.push_back(std::move(value));
            if (!IsOp("}")) ARACH_RETURN_IF_ERROR(ExpectOp(","));
          }
          Next();
          return dict;
        }
        break;
      default: break;
    }
    return ErrorAt(t, absl::StrCat("expected an expression, found ", Describe(t)));
  }

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        const Position at = At(Next());
        const Token& name = Peek();
        if (name.type == Type::kName) {
          Next();
          ExprPtr e = Make(Expr::Kind::kAttribute, at);
          e->name = name.value;
          e->items.push_back(std::move(node));
          node = std::move(e);
        } else if (name.type == Type::kInteger) {  // x.0 is x[0]
          Next();
          int64_t position = 0;
          const auto r = std::from_chars(name.value.data(), name.value.data() + name.value.size(), position);
          if (r.ec != std::errc()) return ErrorAt(name, absl::StrCat("the index ", name.value, " is out of range"));
          ExprPtr index = Make(Expr::Kind::kLiteral, At(name));
          index->value = Value::Int(position);
          ExprPtr e = Make(Expr::Kind::kItem, at);
          e->items.push_back(std::move(node));
          e->items.push_back(std::move(index));
          node = std::move(e);
        } else {
          return ErrorAt(name, absl::StrCat("expected an attribute name, found ", Describe(name)));
        }
      } else if (IsOp("[")) {
        ARACH_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
      } else if (IsOp("(")) {
        ARACH_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        return node;
      }
    }
  }

  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node) {
    const Position at = At(Next());  // [
    ExprPtr start, stop, step;
    bool slice = false;
    if (!IsOp(":")) {
      ARACH_ASSIGN_OR_RETURN(start, ParseExpression(true));
    }
    if (IsOp(":")) {
      slice = true;
      Next();
      if (!IsOp("]") && !IsOp(":")) {
        ARACH_ASSIGN_OR_RETURN(stop, ParseExpression(true));
      }
      if (IsOp(":")) {
        Next();
        if (!IsOp("]")) {
          ARACH_ASSIGN_OR_RETURN(step, ParseExpression(true));
        }
      }
    }
    ARACH_RETURN_IF_ERROR(ExpectOp("]"));
    ExprPtr e = Make(slice ? Expr::Kind::kSlice : Expr::Kind::kItem, at);
    e->items.push_back(std::move(node));
    if (slice) {
      e->start = std::move(start);
      e->stop = std::move(stop);
      e->step = std::move(step);
    } else {
      e->items.push_back(std::move(start));
    }
    return e;
  }

  // "(" args ")" into `call` (its items[0] already set when it is a call).
  absl::Status ParseArguments(Expr* call) {
    ARACH_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (IsOp("*") || IsOp("**")) return ErrorAt(Peek(), "unsupported: *args and **kwargs in calls");
      if (Peek().type == Type::kName && IsOp("=", 1)) {
        const std::string name = Next().value;
        Next();
        ARACH_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
        call->keyword.emplace_back(name, std::move(value));
      } else {
        if (!call->keyword.empty()) return ErrorAt(Peek(), "a positional argument follows a keyword argument");
        ARACH_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
        call->items.push_back(std::move(value));
      }
      if (!IsOp(")")) ARACH_RETURN_IF_ERROR(ExpectOp(","));
    }
    Next();
    return absl::OkStatus();
  }

  absl::StatusOr<ExprPtr> ParseCall(ExprPtr callee) {
    ExprPtr e = Make(Expr::Kind::kCall, At(Peek()));
    e->items.push_back(std::move(callee));
    ARACH_RETURN_IF_ERROR(ParseArguments(e.get()));
    return e;
  }

  // After "|": NAME [(args)] applied to `node`.
  absl::StatusOr<ExprPtr> ParseFilterApplication(ExprPtr node) {
    const Token& name = Peek();
    ARACH_ASSIGN_OR_RETURN(std::string filter, ExpectName("a filter name"));
    if (!IsKnownFilter(filter)) return ErrorAt(name, absl::StrCat("unsupported filter '", filter, "'"));
    ExprPtr e = Make(Expr::Kind::kFilter, At(name));
    e->name = filter;
    e->items.push_back(std::move(node));
    if (IsOp("(")) ARACH_RETURN_IF_ERROR(ParseArguments(e.get()));
    return e;
  }

  absl::StatusOr<ExprPtr> ParseFilters(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        Next();
        ARACH_ASSIGN_OR_RETURN(node, ParseFilterApplication(std::move(node)));
      } else if (IsName("is")) {
        Next();
        ExprPtr e = Make(Expr::Kind::kTest, At(Peek()));
        if (IsName("not")) {
          Next();
          e->negated = true;
        }
        const Token& name = Peek();
        ARACH_ASSIGN_OR_RETURN(e->name, ExpectName("a test name"));
        if (!IsKnownTest(e->name)) return ErrorAt(name, absl::StrCat("unsupported test '", e->name, "'"));
        e->items.push_back(std::move(node));
        if (IsOp("(")) {
          ARACH_RETURN_IF_ERROR(ParseArguments(e.get()));
        } else {
          const Token& t = Peek();
          const bool starts_primary = t.type == Type::kName || t.type == Type::kString || t.type == Type::kInteger ||
                                      t.type == Type::kFloat || IsOp("(") || IsOp("[") || IsOp("{");
          if (starts_primary && !IsName("else") && !IsName("or") && !IsName("and")) {
            ARACH_ASSIGN_OR_RETURN(ExprPtr argument, ParsePrimary());
            ARACH_ASSIGN_OR_RETURN(argument, ParsePostfix(std::move(argument)));
            e->items.push_back(std::move(argument));
          }
        }
        node = std::move(e);
      } else if (IsOp("(")) {
        ARACH_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

absl::StatusOr<Template> ParseTemplate(std::string_view source) {
  ARACH_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return Parser(std::move(tokens)).Run();
}

}  // namespace arach::jinja
