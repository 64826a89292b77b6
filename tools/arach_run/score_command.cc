// arach-run score: the perplexity of a text through the serving Engine's score requests, the path the
// server's Score RPC and the HTTP API's echo scoring take too.
#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "tools/arach_run/commands.h"

namespace arach::tools {
namespace {

// Keeps a score request's finish and lets the caller wait for it.
class FinishWaiter : public RequestObserver {
 public:
  void OnChunk(const StreamChunk&) override {}
  void OnFinish(const FinishInfo& info) override {
    info_ = info;
    done_.Notify();
  }
  const FinishInfo& Wait() {
    done_.WaitForNotification();
    return info_;
  }

 private:
  FinishInfo info_;
  absl::Notification done_;
};

}  // namespace

// Scores windows ids[w*W : w*W + W + 1], each on its last W tokens (the first token of a window is
// context only), the protocol of the fixtures' validation perplexity. The windows are submitted together,
// so the engine batches them.
absl::Status RunScore(const ScoreOptions& options) {
  ARACH_ASSIGN_OR_RETURN(ModelBundle model, LoadModelBundle(options.model.model_dir, options.model.load));
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
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(std::move(model), EngineConfig{}));

  struct Window {
    std::vector<int32_t> ids;
    std::shared_ptr<FinishWaiter> finish = std::make_shared<FinishWaiter>();
  };
  std::vector<Window> windows;
  for (size_t begin = 0; begin + 1 < ids.size(); begin += window) {
    if (options.max_windows > 0 && static_cast<int>(windows.size()) >= options.max_windows) break;
    Window& w = windows.emplace_back();
    w.ids.assign(ids.begin() + begin, ids.begin() + std::min(ids.size(), begin + window + 1));
    EngineRequest request;
    request.kind = RequestKind::kScore;
    request.prompt = w.ids;
    request.variant = options.model.variant;
    ARACH_RETURN_IF_ERROR(engine->Submit(std::move(request), w.finish).status());
  }

  double total_nll = 0.0;
  int scored = 0;
  nlohmann::json tokens = nlohmann::json::array();
  for (Window& w : windows) {
    const FinishInfo& info = w.finish->Wait();
    if (!info.status.ok()) return info.status;
    for (size_t i = 0; i < info.prompt_logprobs.size(); ++i) {
      total_nll -= info.prompt_logprobs[i];
      ++scored;
      if (options.per_token) {
        ARACH_ASSIGN_OR_RETURN(std::string piece, engine->tokenizer().Decode(std::vector<int32_t>{w.ids[i + 1]}, false));
        tokens.push_back({{"id", w.ids[i + 1]}, {"text", piece}, {"logprob", info.prompt_logprobs[i]}});
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
