// arach-run tokenize / detokenize: the model folder's tokenizer on stdin lines, so that any tokenizer
// folder can be checked against the reference implementation (only the tokenizer files are read).
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "nlohmann/json.hpp"
#include "tools/arach_run/commands.h"

namespace arach::tools {
namespace {

// Calls `fn` with each non-empty stdin line parsed as JSON; errors name the line.
template <typename Fn>
absl::Status ForEachJsonLine(const char* command, const Fn& fn) {
  std::string line;
  int line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (line.empty()) continue;
    const nlohmann::json input = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const absl::Status status = input.is_discarded() ? absl::InvalidArgumentError("not JSON") : fn(input);
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(command, ": stdin line ", line_number, ": ", status.message()));
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunTokenize(const TokenizeOptions& options) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(options.model_dir));
  return ForEachJsonLine("tokenize", [&](const nlohmann::json& input) -> absl::Status {
    if (!input.is_string()) return absl::InvalidArgumentError("not a JSON string");
    ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer->Encode(input.get<std::string>(), options.add_special_tokens));
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    return absl::OkStatus();
  });
}

absl::Status RunDetokenize(const TokenizeOptions& options) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(options.model_dir));
  return ForEachJsonLine("detokenize", [&](const nlohmann::json& input) -> absl::Status {
    if (!input.is_array()) return absl::InvalidArgumentError("not a JSON array of ids");
    std::vector<int32_t> ids;
    for (const nlohmann::json& id : input) {
      if (!id.is_number_integer()) return absl::InvalidArgumentError("not a JSON array of ids");
      ids.push_back(id.get<int32_t>());
    }
    ARACH_ASSIGN_OR_RETURN(std::string bytes, tokenizer->Decode(ids, options.skip_special_tokens));
    std::printf("%s\n", nlohmann::json(SanitizeUtf8(bytes)).dump().c_str());
    return absl::OkStatus();
  });
}

}  // namespace arach::tools
