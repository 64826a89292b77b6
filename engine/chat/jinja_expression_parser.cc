// Jinja expressions, with Jinja2's operator precedence (lowest first): conditional, or, and, not, comparisons and
// `in`, + -, ~, * / // %, **, unary - +, then primaries with their postfixes (.attr, [item], [slice], (call)),
// filters (|) and tests (is).
#include <charconv>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_parser_state.h"
#include "engine/core/status.h"

namespace arach::jinja::parsing {

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool with_conditional) {
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

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_conditional) {
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

absl::StatusOr<ExprPtr> Parser::Binary(const std::string& op, ExprPtr lhs, ExprPtr rhs, Position at) {
  ExprPtr e = Make(Expr::Kind::kBinary, at);
  e->name = op;
  e->items.push_back(std::move(lhs));
  e->items.push_back(std::move(rhs));
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseAnd());
  while (IsName("or")) {
    const Position at = At(Next());
    ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseAnd());
    ARACH_ASSIGN_OR_RETURN(lhs, Binary("or", std::move(lhs), std::move(rhs), at));
  }
  return lhs;
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseNot());
  while (IsName("and")) {
    const Position at = At(Next());
    ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseNot());
    ARACH_ASSIGN_OR_RETURN(lhs, Binary("and", std::move(lhs), std::move(rhs), at));
  }
  return lhs;
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
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

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
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

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseConcat());
  while (IsOp("+") || IsOp("-")) {
    const Token& op = Next();
    ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseConcat());
    ARACH_ASSIGN_OR_RETURN(lhs, Binary(op.value, std::move(lhs), std::move(rhs), At(op)));
  }
  return lhs;
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseMath2());
  while (IsOp("~")) {
    const Token& op = Next();
    ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath2());
    ARACH_ASSIGN_OR_RETURN(lhs, Binary("~", std::move(lhs), std::move(rhs), At(op)));
  }
  return lhs;
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParsePow());
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token& op = Next();
    ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParsePow());
    ARACH_ASSIGN_OR_RETURN(lhs, Binary(op.value, std::move(lhs), std::move(rhs), At(op)));
  }
  return lhs;
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  ARACH_ASSIGN_OR_RETURN(ExprPtr lhs, ParseUnary(true));
  while (IsOp("**")) {
    const Token& op = Next();
    ARACH_ASSIGN_OR_RETURN(ExprPtr rhs, ParseUnary(true));
    ARACH_ASSIGN_OR_RETURN(lhs, Binary("**", std::move(lhs), std::move(rhs), At(op)));
  }
  return lhs;
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
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

absl::StatusOr<ExprPtr> Parser::ParsePrimary() {
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

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
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

absl::StatusOr<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
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

absl::Status Parser::ParseArguments(Expr* call) {
  ARACH_RETURN_IF_ERROR(ExpectOp("("));
  // As Jinja2 orders them: positional arguments, then *args, keyword arguments and **kwargs (keywords may come
  // before or after *args).
  while (!IsOp(")")) {
    if (IsOp("*") || IsOp("**")) {
      const bool keywords = IsOp("**");
      if (call->dyn_kwargs != nullptr || (!keywords && call->dyn_args != nullptr)) {
        return ErrorAt(Peek(), keywords ? "a second **kwargs" : "*args after *args or **kwargs");
      }
      Next();
      ARACH_ASSIGN_OR_RETURN((keywords ? call->dyn_kwargs : call->dyn_args), ParseExpression(true));
    } else if (Peek().type == Type::kName && IsOp("=", 1)) {
      if (call->dyn_kwargs != nullptr) return ErrorAt(Peek(), "a keyword argument follows **kwargs");
      const std::string name = Next().value;
      Next();
      ARACH_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      call->keyword.emplace_back(name, std::move(value));
    } else {
      if (!call->keyword.empty() || call->dyn_args != nullptr || call->dyn_kwargs != nullptr) {
        return ErrorAt(Peek(), "a positional argument follows a keyword argument, *args or **kwargs");
      }
      ARACH_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      call->items.push_back(std::move(value));
    }
    if (!IsOp(")")) ARACH_RETURN_IF_ERROR(ExpectOp(","));
  }
  Next();
  return absl::OkStatus();
}

absl::StatusOr<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  ExprPtr e = Make(Expr::Kind::kCall, At(Peek()));
  e->items.push_back(std::move(callee));
  ARACH_RETURN_IF_ERROR(ParseArguments(e.get()));
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseFilterApplication(ExprPtr node) {
  const Token& name = Peek();
  ARACH_ASSIGN_OR_RETURN(std::string filter, ExpectName("a filter name"));
  if (!IsKnownFilter(filter)) return ErrorAt(name, absl::StrCat("unsupported filter '", filter, "'"));
  ExprPtr e = Make(Expr::Kind::kFilter, At(name));
  e->name = filter;
  e->items.push_back(std::move(node));
  if (IsOp("(")) ARACH_RETURN_IF_ERROR(ParseArguments(e.get()));
  return e;
}

absl::StatusOr<ExprPtr> Parser::ParseFilters(ExprPtr node) {
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

}  // namespace arach::jinja::parsing
