#include "client/cli/variant_arg.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace arach::client {

absl::StatusOr<arach::v1::VariantSpec> ParseVariantArg(const std::string& arg) {
  const size_t at = arg.find('@');
  const std::string name = arg.substr(0, at);
  arach::v1::VariantSpec spec;
  if (name == "base" || name == "skip") {
    spec.set_arach(false);
  } else if (name == "arach" || name == "arach+skip") {
    spec.set_arach(true);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("variant \"", arg, "\": use base, arach, skip or arach+skip[@OFFSET]"));
  }
  spec.set_skip(name == "skip" || name == "arach+skip");
  if (at != std::string::npos) {
    float offset;
    if (!absl::SimpleAtof(arg.substr(at + 1), &offset)) {
      return absl::InvalidArgumentError(absl::StrCat("variant \"", arg, "\": the offset after @ is not a number"));
    }
    spec.set_arach_offset(offset);
  }
  return spec;
}

}  // namespace arach::client
