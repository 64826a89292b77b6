// Status helpers used at every fallible boundary of the engine.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns early from the enclosing function when `expr` (an absl::Status) is not OK.
#define ARACH_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::absl::Status arach_status_ = (expr);            \
    if (!arach_status_.ok()) return arach_status_;    \
  } while (0)

#define ARACH_CONCAT_INNER_(a, b) a##b
#define ARACH_CONCAT_(a, b) ARACH_CONCAT_INNER_(a, b)

// `lhs = value of expr` where expr is an absl::StatusOr<T>; returns its status early on error.
// Expands to several statements: inside an if/else, use braces.
#define ARACH_ASSIGN_OR_RETURN(lhs, expr) \
  ARACH_ASSIGN_OR_RETURN_IMPL_(ARACH_CONCAT_(arach_statusor_, __LINE__), lhs, expr)

#define ARACH_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()
