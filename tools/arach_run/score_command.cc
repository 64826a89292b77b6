#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/runner/offline_session.h"
#include "nlohmann/json.hpp"
#include "tools/arach_run/commands.h"

namespace arach::tools {

// Scores windows ids[w*W : w*W + W + 1], each on its last W tokens (the first token of a window is
// context only), the protocol of the fixtures' validation perplexity.
absl::Status RunScore(const ScoreOptions& options) {
  ARACH_ASSIGN_OR_RETURN(LoadedModel model, LoadModel(options.model.model_dir, options.model.load));
  std::vector<int32_t> ids = options.ids;
  if (ids.empty()) {
    std::string text = options.text;
    if (!options.file.empty()) {
      ARACH_ASSIGN_OR_RETURN(text, ReadFileToString(options.file));
    }
    if (text.empty()) return absl::InvalidArgumentError("score: give --text, --file or --ids");
    ARACH_ASSIGN_OR_RETURN(ids, EncodePrompt(*model.tokenizer, text));
  }
  if (ids.size() < 2) return absl::InvalidArgumentError("score: at least two tokens are needed");
  const int window = options.window > 0 ? options.window : std::min(model.config.max_positions - 1, 1024);
  if (window + 1 > model.config.max_positions) {
    return absl::InvalidArgumentError(absl::StrCat("score: --window ", window, " + 1 exceeds the context of ",
                                                   model.config.max_positions));
  }
  OfflineSession session(*model.runner);
  double total_nll = 0.0;
  int scored = 0;
  nlohmann::json tokens = nlohmann::json::array();
  for (size_t begin = 0; begin + 1 < ids.size(); begin += window) {
    if (options.max_windows > 0 && static_cast<int>(begin / window) >= options.max_windows) break;
    const size_t end = std::min(ids.size(), begin + window + 1);
    const std::vector<int32_t> chunk(ids.begin() + begin, ids.begin() + end);
    ARACH_ASSIGN_OR_RETURN(std::vector<double> logprobs, session.TokenLogProbs(chunk, 512, options.model.variant));
    for (size_t i = 0; i < logprobs.size(); ++i) {
      total_nll -= logprobs[i];
      ++scored;
      if (options.per_token) {
        ARACH_ASSIGN_OR_RETURN(std::string piece, model.tokenizer->Decode(std::vector<int32_t>{chunk[i + 1]}, false));
        tokens.push_back({{"id", chunk[i + 1]}, {"text", piece}, {"logprob", logprobs[i]}});
      }
    }
  }
  nlohmann::json out = {{"tokens_scored", scored},
                        {"total_nll", total_nll},
                        {"nll_per_token", total_nll / scored},
                        {"perplexity", std::exp(total_nll / scored)},
                        {"window", window},
                        {"variant", options.model.variant.Describe()}};
  if (options.per_token) out["per_token"] = tokens;
  std::printf("%s\n", out.dump(options.per_token ? 1 : -1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return absl::OkStatus();
}

}  // namespace arach::tools
