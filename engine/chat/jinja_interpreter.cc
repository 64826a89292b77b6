#include "engine/chat/jinja_interpreter.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/chat/jinja_builtins.h"
#include "engine/core/status.h"

namespace arach::jinja {
namespace {

constexpr char kPositioned[] = "arach.jinja/positioned";
constexpr int64_t kMaxSteps = 2'000'000;         // statements and expressions evaluated
constexpr size_t kMaxOutputBytes = 64u << 20;    // rendered text
constexpr int kMaxCallDepth = 64;                // nested macro calls and recursive loops
// The attribute of an object that calling it calls (a recursive loop's `loop`): a name no attribute syntax reaches.
constexpr char kCallAttribute[] = " call";

// Variables of one scope; lookups walk to the enclosing scopes.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> parent_in = nullptr) : parent(std::move(parent_in)) {}
  const Value* Find(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      if (const Value* v = s->vars.Find(name); v != nullptr) return v;
    }
    return nullptr;
  }
  std::shared_ptr<Scope> parent;
  Dict vars;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

absl::Status AtPosition(Position at, absl::Status status) {
  if (status.ok() || status.GetPayload(kPositioned) || status.GetPayload(kRaisedByTemplate)) return status;
  absl::Status positioned(status.code(), absl::StrFormat("line %d, column %d: %s", at.line, at.column, status.message()));
  positioned.SetPayload(kPositioned, absl::Cord("1"));
  return positioned;
}

class Renderer {
 public:
  absl::StatusOr<std::string> Run(const Template& tmpl, const Dict& variables) {
    auto globals = std::make_shared<Scope>();
    globals->vars = BuiltinGlobals();
    // namespace() objects are the only mutable values, so the only way to a reference cycle
    // ({% set ns.me = ns %}): they are emptied when rendering ends.
    const Function make_namespace = globals->vars.Find("namespace")->function();
    globals->vars.Set("namespace", Value::MakeFunction("namespace", [this, make_namespace](CallArgs& a) -> absl::StatusOr<Value> {
      ARACH_ASSIGN_OR_RETURN(Value ns, make_namespace(a));
      namespaces_.push_back(ns);
      return ns;
    }));
    for (const auto& [name, value] : variables.items) globals->vars.Set(name, value);
    auto top = std::make_shared<Scope>(globals);
    std::string out;
    Flow flow = Flow::kNormal;
    const absl::Status status = Exec(tmpl.body, top, &out, &flow);
    for (Value& ns : namespaces_) ns.mutable_dict().items.clear();
    if (!status.ok()) return status;
    return out;
  }

 private:
  absl::Status Step(Position at) {
    if (++steps_ > kMaxSteps) return AtPosition(at, absl::ResourceExhaustedError("the template takes too many steps to render"));
    return absl::OkStatus();
  }

  absl::Status Append(std::string* out, const std::string& text, Position at) {
    if (out->size() + text.size() > kMaxOutputBytes) {
      return AtPosition(at, absl::ResourceExhaustedError("the rendered text is larger than 64 MiB"));
    }
    *out += text;
    return absl::OkStatus();
  }

  absl::Status Exec(const Body& body, const ScopePtr& scope, std::string* out, Flow* flow) {
    for (const std::unique_ptr<Stmt>& s : body) {
      ARACH_RETURN_IF_ERROR(Step(s->at));
      ARACH_RETURN_IF_ERROR(ExecOne(*s, scope, out, flow));
      if (*flow != Flow::kNormal) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  absl::Status ExecOne(const Stmt& s, const ScopePtr& scope, std::string* out, Flow* flow) {
    switch (s.kind) {
      case Stmt::Kind::kText: return Append(out, s.text, s.at);
      case Stmt::Kind::kOutput: {
        ARACH_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
        return Append(out, v.Str(), s.at);
      }
      case Stmt::Kind::kIf: {
        for (const auto& [condition, body] : s.branches) {
          ARACH_ASSIGN_OR_RETURN(Value c, Eval(*condition, scope));
          if (c.Truthy()) return Exec(body, scope, out, flow);
        }
        return Exec(s.else_body, scope, out, flow);
      }
      case Stmt::Kind::kFor: return ExecFor(s, scope, out);
      case Stmt::Kind::kSet: {
        ARACH_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
        return AtPosition(s.at, Assign(s.target, std::move(v), *scope));
      }
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        Flow inner = Flow::kNormal;
        ARACH_RETURN_IF_ERROR(Exec(s.body, scope, &captured, &inner));
        scope->vars.Set(s.target.names[0], Value::String(std::move(captured)));
        return absl::OkStatus();
      }
      case Stmt::Kind::kMacro: {
        scope->vars.Set(s.text, MakeMacro(s, scope));
        return absl::OkStatus();
      }
      case Stmt::Kind::kCallBlock: {
        const Value caller = MakeMacro(s, scope);
        ARACH_ASSIGN_OR_RETURN(Value result, EvalCall(*s.expr, scope, &caller));
        return Append(out, result.Str(), s.at);
      }
      case Stmt::Kind::kFilterBlock: {
        auto inner = std::make_shared<Scope>(scope);
        std::string body;
        Flow body_flow = Flow::kNormal;
        ARACH_RETURN_IF_ERROR(Exec(s.body, inner, &body, &body_flow));
        inner->vars.Set(kFilterOperand, Value::String(std::move(body)));
        ARACH_ASSIGN_OR_RETURN(Value filtered, Eval(*s.expr, inner));
        return Append(out, filtered.Str(), s.at);
      }
      case Stmt::Kind::kWith: {
        auto inner = std::make_shared<Scope>(scope);
        for (const auto& [target, value] : s.assignments) {
          ARACH_ASSIGN_OR_RETURN(Value v, Eval(*value, scope));
          ARACH_RETURN_IF_ERROR(AtPosition(s.at, Assign(target, std::move(v), *inner)));
        }
        return Exec(s.body, inner, out, flow);
      }
      case Stmt::Kind::kBreak: *flow = Flow::kBreak; return absl::OkStatus();
      case Stmt::Kind::kContinue: *flow = Flow::kContinue; return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  // Binds `value` to a name, unpacks it into names, or sets a namespace attribute.
  absl::Status Assign(const Target& target, Value value, Scope& scope) {
    if (!target.attribute.empty()) {
      const Value* ns = scope.Find(target.names[0]);
      if (ns == nullptr || !ns->is_dict() || !ns->dict().is_namespace) {
        return absl::InvalidArgumentError(absl::StrCat("cannot assign attribute '", target.attribute, "' on '", target.names[0],
                                                       "': only namespace() objects take attributes"));
      }
      ns->mutable_dict().Set(target.attribute, std::move(value));
      return absl::OkStatus();
    }
    if (target.names.size() == 1) {
      scope.vars.Set(target.names[0], std::move(value));
      return absl::OkStatus();
    }
    ARACH_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(value));
    if (items.size() != target.names.size()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot unpack ", items.size(), " values into ", target.names.size(), " names"));
    }
    for (size_t i = 0; i < items.size(); ++i) scope.vars.Set(target.names[i], std::move(items[i]));
    return absl::OkStatus();
  }

  absl::Status ExecFor(const Stmt& s, const ScopePtr& scope, std::string* out) {
    ARACH_ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr, scope));
    return ExecLoop(s, iterable, scope, out, 1);
  }

  // The for loop `s` over `iterable` at recursion `depth` (1, and one more per loop(items) call of a recursive loop).
  absl::Status ExecLoop(const Stmt& s, const Value& iterable, const ScopePtr& scope, std::string* out, int64_t depth) {
    absl::StatusOr<std::vector<Value>> all = Iterate(iterable);
    if (!all.ok()) return AtPosition(s.expr->at, all.status());
    // The filtering `if` runs first: loop.length and loop.last count only the items it keeps.
    std::vector<Value> items;
    for (Value& item : *all) {
      if (s.condition == nullptr) {
        items.push_back(std::move(item));
        continue;
      }
      auto probe = std::make_shared<Scope>(scope);
      ARACH_RETURN_IF_ERROR(AtPosition(s.at, Assign(s.target, item, *probe)));
      ARACH_ASSIGN_OR_RETURN(Value keep, Eval(*s.condition, probe));
      if (keep.Truthy()) items.push_back(std::move(item));
    }
    if (items.empty()) {
      Flow flow = Flow::kNormal;
      return Exec(s.else_body, scope, out, &flow);
    }
    const int64_t length = static_cast<int64_t>(items.size());
    auto last_changed = std::make_shared<std::optional<std::vector<Value>>>();  // loop.changed's, across iterations
    for (int64_t i = 0; i < length; ++i) {
      auto iteration = std::make_shared<Scope>(scope);
      ARACH_RETURN_IF_ERROR(AtPosition(s.at, Assign(s.target, items[static_cast<size_t>(i)], *iteration)));
      if (s.reads_loop) {
        Value recurse = s.recursive ? RecursiveLoopCall(s, scope, depth) : Value();
        iteration->vars.Set("loop", LoopObject(items, i, depth, last_changed, std::move(recurse)));
      }
      Flow flow = Flow::kNormal;
      ARACH_RETURN_IF_ERROR(Exec(s.body, iteration, out, &flow));
      if (flow == Flow::kBreak) break;
    }
    return absl::OkStatus();
  }

  // A recursive loop's loop(items): the loop's output over `items`, one level deeper. It holds the loop's scope
  // weakly, as a macro does (a namespace the loop object is stored in would otherwise hold its own scope).
  Value RecursiveLoopCall(const Stmt& s, const ScopePtr& scope, int64_t depth) {
    const Stmt* loop_stmt = &s;
    std::weak_ptr<Scope> weak_scope = scope;
    return Value::MakeFunction("loop", [this, loop_stmt, weak_scope, depth](CallArgs& a) -> absl::StatusOr<Value> {
      const ScopePtr defining = weak_scope.lock();
      if (defining == nullptr) return absl::FailedPreconditionError("a recursive loop called after its scope ended");
      if (a.positional.size() != 1 || !a.keyword.empty()) return absl::InvalidArgumentError("loop() takes the items to recurse into");
      if (call_depth_ >= kMaxCallDepth) return absl::ResourceExhaustedError("recursive loops nest too deeply");
      ++call_depth_;
      std::string rendered;
      const absl::Status status = ExecLoop(*loop_stmt, a.positional[0], defining, &rendered, depth + 1);
      --call_depth_;
      if (!status.ok()) return status;
      return Value::String(std::move(rendered));
    });
  }

  // `last_changed`: the values loop.changed was last called with in this loop (none yet).
  // `recurse`: a recursive loop's loop(items) (RecursiveLoopCall), else undefined.
  static Value LoopObject(const std::vector<Value>& items, int64_t i, int64_t depth,
                          std::shared_ptr<std::optional<std::vector<Value>>> last_changed, Value recurse) {
    const int64_t n = static_cast<int64_t>(items.size());
    Dict loop;
    loop.Set("index", Value::Int(i + 1));
    loop.Set("index0", Value::Int(i));
    loop.Set("revindex", Value::Int(n - i));
    loop.Set("revindex0", Value::Int(n - i - 1));
    loop.Set("first", Value::Bool(i == 0));
    loop.Set("last", Value::Bool(i == n - 1));
    loop.Set("length", Value::Int(n));
    loop.Set("depth", Value::Int(depth));
    loop.Set("depth0", Value::Int(depth - 1));
    loop.Set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::Undefined("there is no previous item"));
    loop.Set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::Undefined("there is no next item"));
    loop.Set("cycle", Value::MakeFunction("cycle", [i](CallArgs& a) -> absl::StatusOr<Value> {
      if (a.positional.empty()) return absl::InvalidArgumentError("no items for cycling given");
      return a.positional[static_cast<size_t>(i) % a.positional.size()];
    }));
    loop.Set("changed", Value::MakeFunction("changed", [last_changed](CallArgs& a) -> absl::StatusOr<Value> {
      const std::vector<Value>& now = a.positional;
      const bool same = last_changed->has_value() && (*last_changed)->size() == now.size() &&
                        std::equal(now.begin(), now.end(), (*last_changed)->begin(), [](const Value& x, const Value& y) { return x.Equals(y); });
      if (same) return Value::Bool(false);
      *last_changed = now;
      return Value::Bool(true);
    }));
    if (recurse.is_function()) loop.Set(kCallAttribute, std::move(recurse));
    loop.is_namespace = true;  // attributes only: loop.items is not a dict method
    return Value::MakeDict(std::move(loop));
  }

  // The macro holds its scope weakly: the scope holds the macro, and a strong reference would be a cycle.
  Value MakeMacro(const Stmt& macro, const ScopePtr& scope) {
    const Stmt* m = &macro;
    std::weak_ptr<Scope> weak_scope = scope;
    return Value::MakeFunction(macro.text, [this, m, weak_scope](CallArgs& a) -> absl::StatusOr<Value> {
      const ScopePtr defined_in = weak_scope.lock();
      if (defined_in == nullptr) return absl::InvalidArgumentError(absl::StrCat("macro '", m->text, "' outlived its scope"));
      if (call_depth_ >= kMaxCallDepth) return absl::ResourceExhaustedError("macros call each other too deeply");
      if (a.positional.size() > m->params.size() && !m->catches_varargs) {
        return absl::InvalidArgumentError(absl::StrCat("macro '", m->text, "' takes not more than ", m->params.size(), " argument(s)"));
      }
      auto scope = std::make_shared<Scope>(defined_in);
      if (m->catches_varargs) {
        const size_t taken = std::min(a.positional.size(), m->params.size());
        scope->vars.Set("varargs", Value::Tuple(std::vector<Value>(a.positional.begin() + static_cast<std::ptrdiff_t>(taken), a.positional.end())));
      }
      Dict kwargs;
      // Each macro's `caller` is its own: a call block's body, or none (not an enclosing macro's).
      scope->vars.Set("caller", Value::Undefined("No caller defined"));
      for (size_t i = 0; i < m->params.size(); ++i) {
        const MacroParam& p = m->params[i];
        const Value* given = i < a.positional.size() ? &a.positional[i] : nullptr;
        for (const auto& [key, value] : a.keyword) {
          if (key == p.name && given == nullptr) given = &value;
        }
        if (given != nullptr) {
          scope->vars.Set(p.name, *given);
        } else if (p.default_value != nullptr) {
          ARACH_ASSIGN_OR_RETURN(Value v, Eval(*p.default_value, scope));
          scope->vars.Set(p.name, std::move(v));
        } else {
          scope->vars.Set(p.name, Value::Undefined(absl::StrCat("'", p.name, "' is undefined")));
        }
      }
      for (const auto& keyword : a.keyword) {
        const std::string& key = keyword.first;  // (not a structured binding: clang cannot capture those)
        if (key == "caller" && keyword.second.is_function()) {  // a call block's body ({% call %})
          scope->vars.Set("caller", keyword.second);
          continue;
        }
        const auto param = std::find_if(m->params.begin(), m->params.end(), [&key](const MacroParam& p) { return p.name == key; });
        // A parameter the positional arguments filled is not a keyword's to fill again (Jinja2's error).
        const bool filled = param != m->params.end() && static_cast<size_t>(param - m->params.begin()) < a.positional.size();
        if (param != m->params.end() && !filled) continue;
        if (!m->catches_kwargs) return absl::InvalidArgumentError(absl::StrCat("macro '", m->text, "' takes no keyword argument '", key, "'"));
        kwargs.Set(key, keyword.second);
      }
      if (m->catches_kwargs) scope->vars.Set("kwargs", Value::MakeDict(std::move(kwargs)));
      ++call_depth_;
      std::string out;
      Flow flow = Flow::kNormal;
      const absl::Status status = Exec(m->body, scope, &out, &flow);
      --call_depth_;
      if (!status.ok()) return status;
      return Value::String(std::move(out));
    });
  }

  absl::StatusOr<CallArgs> EvalArgs(const Expr& e, size_t first, const ScopePtr& scope) {
    CallArgs args;
    for (size_t i = first; i < e.items.size(); ++i) {
      ARACH_ASSIGN_OR_RETURN(Value v, Eval(*e.items[i], scope));
      args.positional.push_back(std::move(v));
    }
    if (e.dyn_args != nullptr) {  // f(*items)
      ARACH_ASSIGN_OR_RETURN(Value items, Eval(*e.dyn_args, scope));
      ARACH_ASSIGN_OR_RETURN(std::vector<Value> spread, Iterate(items));
      for (Value& item : spread) args.positional.push_back(std::move(item));
    }
    for (const auto& [name, expr] : e.keyword) {
      ARACH_ASSIGN_OR_RETURN(Value v, Eval(*expr, scope));
      args.keyword.emplace_back(name, std::move(v));
    }
    if (e.dyn_kwargs != nullptr) {  // f(**mapping)
      ARACH_ASSIGN_OR_RETURN(Value mapping, Eval(*e.dyn_kwargs, scope));
      if (!mapping.is_dict() || mapping.dict().is_namespace) {
        return absl::InvalidArgumentError(absl::StrCat("argument after ** must be a mapping, not ", mapping.TypeName()));
      }
      for (const auto& entry : mapping.dict().items) {
        const std::string& name = entry.first;  // (not a structured binding: clang cannot capture those)
        const bool repeated = std::any_of(args.keyword.begin(), args.keyword.end(), [&name](const auto& k) { return k.first == name; });
        if (repeated) return absl::InvalidArgumentError(absl::StrCat("got multiple values for keyword argument '", name, "'"));
        args.keyword.emplace_back(name, entry.second);
      }
    }
    return args;
  }

  // A kCall expression; `caller`, when given, is passed as the keyword argument a call block gives its macro.
  absl::StatusOr<Value> EvalCall(const Expr& e, const ScopePtr& scope, const Value* caller) {
    ARACH_ASSIGN_OR_RETURN(Value callee, Eval(*e.items[0], scope));
    if (callee.is_undefined()) return AtPosition(e.at, UndefinedError(callee));
    if (callee.is_dict()) {  // an object with a call (a recursive loop's `loop`)
      const Value* call = callee.dict().Find(kCallAttribute);
      if (call != nullptr) callee = *call;
    }
    if (!callee.is_function()) {
      return AtPosition(e.at, absl::InvalidArgumentError(absl::StrCat("'", callee.TypeName(), "' object is not callable")));
    }
    ARACH_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
    if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
    absl::StatusOr<Value> result = callee.function()(args);
    if (!result.ok()) return AtPosition(e.at, result.status());
    return result;
  }

  absl::StatusOr<Value> Eval(const Expr& e, const ScopePtr& scope) {
    ARACH_RETURN_IF_ERROR(Step(e.at));
    absl::StatusOr<Value> v = EvalInner(e, scope);
    if (!v.ok()) return AtPosition(e.at, v.status());
    return v;
  }

  absl::StatusOr<Value> EvalInner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        const Value* v = scope->Find(e.name);
        return v != nullptr ? *v : Value::Undefined(absl::StrCat("'", e.name, "' is undefined"));
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        std::vector<Value> items;
        for (const ExprPtr& item : e.items) {
          ARACH_ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
          items.push_back(std::move(v));
        }
        return e.kind == Expr::Kind::kTuple ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
      }
      case Expr::Kind::kDict: {
        Dict dict;
        for (size_t i = 0; i < e.items.size(); ++i) {
          ARACH_ASSIGN_OR_RETURN(Value key, Eval(*e.keys[i], scope));
          if (!key.is_string()) return absl::InvalidArgumentError("dict keys must be strings here");
          ARACH_ASSIGN_OR_RETURN(Value value, Eval(*e.items[i], scope));
          dict.Set(key.as_string(), std::move(value));
        }
        return Value::MakeDict(std::move(dict));
      }
      case Expr::Kind::kAttribute: {
        ARACH_ASSIGN_OR_RETURN(Value object, Eval(*e.items[0], scope));
        return GetAttribute(object, e.name);
      }
      case Expr::Kind::kItem: {
        ARACH_ASSIGN_OR_RETURN(Value object, Eval(*e.items[0], scope));
        ARACH_ASSIGN_OR_RETURN(Value key, Eval(*e.items[1], scope));
        return GetItem(object, key);
      }
      case Expr::Kind::kSlice: {
        ARACH_ASSIGN_OR_RETURN(Value object, Eval(*e.items[0], scope));
        Value start, stop, step;
        if (e.start) {
          ARACH_ASSIGN_OR_RETURN(start, Eval(*e.start, scope));
        }
        if (e.stop) {
          ARACH_ASSIGN_OR_RETURN(stop, Eval(*e.stop, scope));
        }
        if (e.step) {
          ARACH_ASSIGN_OR_RETURN(step, Eval(*e.step, scope));
        }
        return GetSlice(object, start, stop, step);
      }
      case Expr::Kind::kCall: return EvalCall(e, scope, nullptr);
      case Expr::Kind::kFilter: {
        ARACH_ASSIGN_OR_RETURN(Value operand, Eval(*e.items[0], scope));
        ARACH_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
        return ApplyFilter(e.name, operand, args);
      }
      case Expr::Kind::kTest: {
        ARACH_ASSIGN_OR_RETURN(Value operand, Eval(*e.items[0], scope));
        ARACH_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1, scope));
        ARACH_ASSIGN_OR_RETURN(bool passed, ApplyTest(e.name, operand, args));
        return Value::Bool(passed != e.negated);
      }
      case Expr::Kind::kNot: {
        ARACH_ASSIGN_OR_RETURN(Value v, Eval(*e.items[0], scope));
        return Value::Bool(!v.Truthy());
      }
      case Expr::Kind::kNegate: {
        ARACH_ASSIGN_OR_RETURN(Value v, Eval(*e.items[0], scope));
        if (v.is_undefined()) return UndefinedError(v);
        if (v.is_float()) return Value::Float(-v.as_double());
        if (v.is_int() || v.is_bool()) {
          if (v.as_int() == INT64_MIN) return absl::InvalidArgumentError("integer overflow");
          return Value::Int(-v.as_int());
        }
        return absl::InvalidArgumentError(absl::StrCat("bad operand type for unary -: '", v.TypeName(), "'"));
      }
      case Expr::Kind::kBinary: {
        ARACH_ASSIGN_OR_RETURN(Value lhs, Eval(*e.items[0], scope));
        if (e.name == "and") return lhs.Truthy() ? Eval(*e.items[1], scope) : lhs;
        if (e.name == "or") return lhs.Truthy() ? lhs : Eval(*e.items[1], scope);
        ARACH_ASSIGN_OR_RETURN(Value rhs, Eval(*e.items[1], scope));
        return BinaryOperation(e.name, lhs, rhs);
      }
      case Expr::Kind::kCompare: {
        ARACH_ASSIGN_OR_RETURN(Value lhs, Eval(*e.items[0], scope));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          ARACH_ASSIGN_OR_RETURN(Value rhs, Eval(*e.items[i + 1], scope));
          ARACH_ASSIGN_OR_RETURN(bool holds, Compare(e.ops[i], lhs, rhs));
          if (!holds) return Value::Bool(false);
          lhs = std::move(rhs);
        }
        return Value::Bool(true);
      }
      case Expr::Kind::kConditional: {
        ARACH_ASSIGN_OR_RETURN(Value condition, Eval(*e.items[0], scope));
        if (condition.Truthy()) return Eval(*e.items[1], scope);
        if (e.items[2] == nullptr) return Value::Undefined("the conditional expression has no else");
        return Eval(*e.items[2], scope);
      }
    }
    return absl::InternalError("unknown expression");
  }

  static absl::StatusOr<bool> Compare(const std::string& op, const Value& lhs, const Value& rhs) {
    if (op == "==") return lhs.Equals(rhs);
    if (op == "!=") return !lhs.Equals(rhs);
    if (op == "in") return Contains(rhs, lhs);
    if (op == "not in") {
      ARACH_ASSIGN_OR_RETURN(bool in, Contains(rhs, lhs));
      return !in;
    }
    if (lhs.is_undefined()) return UndefinedError(lhs);
    if (rhs.is_undefined()) return UndefinedError(rhs);
    if (op == "<") return lhs.Less(rhs);
    if (op == ">") return rhs.Less(lhs);
    if (op == "<=") {
      ARACH_ASSIGN_OR_RETURN(bool greater, rhs.Less(lhs));
      return !greater;
    }
    ARACH_ASSIGN_OR_RETURN(bool less, lhs.Less(rhs));  // >=
    return !less;
  }

  int64_t steps_ = 0;
  int call_depth_ = 0;
  std::vector<Value> namespaces_;  // every namespace() made while rendering
};

}  // namespace

absl::StatusOr<std::string> Render(const Template& tmpl, const Dict& variables) { return Renderer().Run(tmpl, variables); }

}  // namespace arach::jinja
