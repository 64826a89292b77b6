#include "engine/chat/jinja_ast.h"

namespace arach::jinja {
namespace {

bool ReadsName(const Expr* e, std::string_view name) {
  if (e == nullptr) return false;
  if (e->kind == Expr::Kind::kName && e->name == name) return true;
  for (const ExprPtr& item : e->items) {
    if (ReadsName(item.get(), name)) return true;
  }
  for (const ExprPtr& key : e->keys) {
    if (ReadsName(key.get(), name)) return true;
  }
  for (const auto& keyword : e->keyword) {
    if (ReadsName(keyword.second.get(), name)) return true;
  }
  return ReadsName(e->start.get(), name) || ReadsName(e->stop.get(), name) || ReadsName(e->step.get(), name) ||
         ReadsName(e->dyn_args.get(), name) || ReadsName(e->dyn_kwargs.get(), name);
}

}  // namespace

bool ReadsName(const Body& body, std::string_view name) {
  for (const std::unique_ptr<Stmt>& s : body) {
    if (ReadsName(s->expr.get(), name) || ReadsName(s->condition.get(), name) || ReadsName(s->body, name) ||
        ReadsName(s->else_body, name)) {
      return true;
    }
    for (const auto& [condition, branch] : s->branches) {
      if (ReadsName(condition.get(), name) || ReadsName(branch, name)) return true;
    }
    for (const MacroParam& p : s->params) {
      if (ReadsName(p.default_value.get(), name)) return true;
    }
    for (const auto& assignment : s->assignments) {
      if (ReadsName(assignment.second.get(), name)) return true;
    }
  }
  return false;
}

}  // namespace arach::jinja
