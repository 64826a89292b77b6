// arach-run generate: one request through the serving Engine (sampling, stop rules), text streamed to
// stdout as it is produced.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "engine/core/status.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "tools/arach_run/commands.h"

namespace arach::tools {
namespace {

// Prints text as it arrives (unless JSON output is asked for) and keeps the ids.
class PrintingObserver : public RequestObserver {
 public:
  explicit PrintingObserver(bool quiet) : quiet_(quiet) {}
  void OnChunk(const StreamChunk& chunk) override {
    for (const SampledToken& t : chunk.tokens) ids_.push_back(t.token);
    text_ += chunk.text;
    if (!quiet_) {
      std::fputs(chunk.text.c_str(), stdout);
      std::fflush(stdout);
    }
  }
  void OnFinish(const FinishInfo& info) override {
    text_ += info.text;
    if (!quiet_) std::fputs(info.text.c_str(), stdout);
    info_ = info;
    done_.Notify();
  }
  void Wait() { done_.WaitForNotification(); }
  const std::vector<int32_t>& ids() const { return ids_; }
  const std::string& text() const { return text_; }
  const FinishInfo& info() const { return info_; }

 private:
  bool quiet_;
  std::vector<int32_t> ids_;
  std::string text_;
  FinishInfo info_;
  absl::Notification done_;
};

}  // namespace

absl::Status RunGenerate(const GenerateOptions& options) {
  ARACH_ASSIGN_OR_RETURN(ModelBundle model, LoadModelBundle(options.model.model_dir, options.model.load));
  EngineRequest request;
  request.prompt = options.ids;
  if (request.prompt.empty()) {
    if (options.prompt.empty()) return absl::InvalidArgumentError("generate: give --prompt TEXT or --ids 1,2,3");
    ARACH_ASSIGN_OR_RETURN(request.prompt, EncodePrompt(*model.tokenizer, options.prompt));
    if (request.prompt.empty()) return absl::InvalidArgumentError("generate: --prompt encodes to no tokens");
  }
  request.sampling = options.sampling;
  request.variant = options.model.variant;
  const std::string device = model.runner->backend().Describe();
  const std::string dir = model.dir;
  EngineConfig config;
  config.max_num_batched_tokens = options.prefill_chunk > 0 ? options.prefill_chunk : 512;
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(std::move(model), config));
  auto observer = std::make_shared<PrintingObserver>(options.json);
  ARACH_RETURN_IF_ERROR(engine->Submit(request, observer).status());
  observer->Wait();
  const FinishInfo& info = observer->info();
  if (!info.status.ok() && info.reason == FinishReason::kError) return info.status;

  if (options.json) {
    nlohmann::json out = {{"model", dir},
                          {"prompt_ids", request.prompt},
                          {"ids", observer->ids()},
                          {"text", observer->text()},
                          {"finish_reason", FinishReasonName(info.reason)},
                          {"variant", request.variant.Describe()},
                          {"seconds", info.timings.total_seconds},
                          {"time_to_first_token_seconds", info.timings.time_to_first_token_seconds},
                          {"time_per_output_token_seconds", info.timings.time_per_output_token_seconds},
                          {"device", device}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[arach-run] %s: %d prompt + %d generated tokens (%s) in %.3f s, TTFT %.1f ms, %.2f ms/token, on %s\n"
                 "[arach-run] ids: %s\n",
                 request.variant.Describe().c_str(), info.usage.prompt_tokens, info.usage.completion_tokens,
                 FinishReasonName(info.reason), info.timings.total_seconds, 1e3 * info.timings.time_to_first_token_seconds,
                 1e3 * info.timings.time_per_output_token_seconds, device.c_str(), absl::StrJoin(observer->ids(), ",").c_str());
  }
  return absl::OkStatus();
}

}  // namespace arach::tools
