#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/status.h"
#include "engine/runner/offline_session.h"
#include "nlohmann/json.hpp"
#include "tools/arach_run/commands.h"

namespace arach::tools {

absl::Status RunGenerate(const GenerateOptions& options) {
  ARACH_ASSIGN_OR_RETURN(LoadedModel model, LoadModel(options.model.model_dir, options.model.load));
  std::vector<int32_t> prompt = options.ids;
  if (prompt.empty()) {
    if (options.prompt.empty()) return absl::InvalidArgumentError("generate: give --prompt TEXT or --ids 1,2,3");
    ARACH_ASSIGN_OR_RETURN(prompt, EncodePrompt(*model.tokenizer, options.prompt, model.config.bos_token_id));
    if (prompt.empty()) return absl::InvalidArgumentError("generate: --prompt encodes to no tokens");
  }
  GreedyOptions greedy;
  greedy.variant = options.model.variant;
  greedy.max_new_tokens = options.max_new_tokens;
  greedy.prefill_chunk = options.prefill_chunk;
  if (!options.ignore_eos) greedy.stop_token_ids = model.config.eos_token_ids;

  OfflineSession session(*model.runner);
  const auto start = std::chrono::steady_clock::now();
  ARACH_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> outputs, session.GenerateGreedy({prompt}, greedy));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<int32_t>& generated = outputs[0];
  ARACH_ASSIGN_OR_RETURN(std::string text, model.tokenizer->Decode(generated));

  if (options.json) {
    nlohmann::json out = {{"model", model.dir},         {"prompt_ids", prompt},  {"ids", generated},
                          {"text", text},               {"seconds", seconds},    {"device", model.runner->backend().Describe()},
                          {"variant", options.model.variant.Describe()}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s\n", text.c_str());
    std::fprintf(stderr, "[arach-run] %s: %zu prompt + %zu generated tokens in %.3f s on %s\n[arach-run] ids: %s\n",
                 options.model.variant.Describe().c_str(), prompt.size(), generated.size(), seconds,
                 model.runner->backend().Describe().c_str(),
                 absl::StrJoin(generated, ",").c_str());
  }
  return absl::OkStatus();
}

}  // namespace arach::tools
