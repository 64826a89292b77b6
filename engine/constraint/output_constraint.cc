#include "engine/constraint/output_constraint.h"

namespace arach {

const char* OutputConstraint::KindName() const {
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kJsonObject: return "json_object";
    case Kind::kJsonSchema: return "json_schema";
    case Kind::kRegex: return "regex";
    case Kind::kChoice: return "choice";
    case Kind::kGrammar: return "grammar";
    case Kind::kStructuralTag: return "structural tag";
  }
  return "?";
}

}  // namespace arach
