#include "client/cli/text_arg.h"

#include "engine/core/mapped_file.h"

namespace arach::client {

absl::StatusOr<std::string> TextArgument(const std::string& text, const std::string& file) {
  std::string chosen = text;
  if (!file.empty()) {
    absl::StatusOr<std::string> contents = ReadFileToString(file);
    if (!contents.ok()) return absl::InvalidArgumentError(contents.status().message());
    chosen = std::move(*contents);
  }
  if (chosen.empty()) return absl::InvalidArgumentError("give --text or --file");
  return chosen;
}

}  // namespace arach::client
