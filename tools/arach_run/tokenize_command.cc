#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tools/arach_run/commands.h"

namespace arach::tools {

absl::Status RunTokenize(const std::string& model_dir) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(model_dir));
  std::string line;
  int line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (line.empty()) continue;
    const nlohmann::json input = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (input.is_discarded() || !input.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("tokenize: stdin line ", line_number, " is not a JSON string"));
    }
    auto ids = tokenizer->Encode(input.get<std::string>());
    if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat("tokenize: stdin line ", line_number, ": ", ids.status().message()));
    std::printf("%s\n", nlohmann::json(*ids).dump().c_str());
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace arach::tools
