// The syntax tree of a parsed template: statements (text, output, if, for, set, macro, call, filter, with, break,
// continue) and expressions. Every node keeps the template line and column it starts at, for error messages.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/jinja_value.h"

namespace arach::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Position {
  int line = 0;
  int column = 0;
};

struct Expr {
  enum class Kind {
    kLiteral,      // value
    kName,         // name
    kList,         // items
    kTuple,        // items
    kDict,         // keys[i] -> items[i]
    kAttribute,    // items[0].name
    kItem,         // items[0][items[1]]
    kSlice,        // items[0][start:stop:step], absent parts null
    kCall,         // items[0](items[1..], keyword)
    kFilter,       // items[0] | name(items[1..], keyword)
    kTest,         // items[0] is [not] name(items[1..])
    kNot,          // not items[0]
    kNegate,       // -items[0]
    kBinary,       // items[0] op items[1]: + - * / // % ** ~ and or in "not in"
    kCompare,      // items[0] ops[0] items[1] ops[1] items[2] ... (== != < <= > >=)
    kConditional,  // items[1] if items[0] else items[2] (items[2] null: undefined)
  };
  Kind kind;
  Position at;
  Value value;               // kLiteral
  std::string name;          // kName, kAttribute, kCall (unused), kFilter, kTest, kBinary (the operator)
  std::vector<ExprPtr> items;
  std::vector<ExprPtr> keys;  // kDict
  std::vector<std::pair<std::string, ExprPtr>> keyword;  // kCall, kFilter, kTest
  ExprPtr dyn_args, dyn_kwargs;  // kCall, kFilter, kTest: f(*dyn_args, **dyn_kwargs), null when absent
  std::vector<std::string> ops;  // kCompare
  bool negated = false;          // kTest
  ExprPtr start, stop, step;     // kSlice
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

// An assignment target: a name, a namespace attribute (ns.attr), or names to unpack (a, b).
struct Target {
  std::vector<std::string> names;  // one, or several to unpack
  std::string attribute;           // set on names[0] when not empty
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind {
    kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kBreak, kContinue,
    kCallBlock,    // {% call(params) macro(args) %}body{% endcall %}: the macro called with `caller` = body
    kFilterBlock,  // {% filter f | g(args) %}body{% endfilter %}
    kWith,         // {% with a = x, b = y %}body{% endwith %}
  };
  Kind kind;
  Position at;
  std::string text;                              // kText; kMacro: its name; kCallBlock: "caller"
  // kOutput, kSet, kFor (the iterable); kCallBlock: the call (a kCall expression); kFilterBlock: the filters over
  // kFilterOperand (a name no template can write), which holds the body's text.
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf: condition -> body (if, elif...)
  Body body;                                     // kFor, kSetBlock, kMacro, kCallBlock (the caller's), kFilterBlock, kWith
  Body else_body;                                // kIf, kFor
  Target target;                                 // kFor (loop variables), kSet, kSetBlock
  ExprPtr condition;                             // kFor: the filtering `if`
  bool recursive = false;                        // kFor: `recursive`: loop(items) renders the loop again over items
  bool reads_loop = false;                       // kFor: its body reads `loop` (as in Jinja2, else none is made)
  std::vector<MacroParam> params;                // kMacro, kCallBlock (the caller's)
  std::vector<std::pair<Target, ExprPtr>> assignments;  // kWith
  // kMacro: its body reads `varargs` / `kwargs` (not parameters of its own), so that, as in Jinja2, positional
  // arguments past its parameters go into the tuple `varargs` and unknown keyword arguments into the dict `kwargs`.
  bool catches_varargs = false;
  bool catches_kwargs = false;
};

// Whether an expression in `body` (or in the statements nested in it) reads the variable `name`.
bool ReadsName(const Body& body, std::string_view name);

inline constexpr char kFilterOperand[] = " filtered block";

struct Template {
  Body body;
};

}  // namespace arach::jinja
