// libFuzzer: arbitrary bytes as a Generate / Score / Tokenize request reach the server's validation
// (request_mapping) against a real engine on a tiny random model: every outcome is a request or an
// INVALID_ARGUMENT-style error, never a crash; accepted requests are also submitted and cancelled.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "arach/v1/inference.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "engine/engine.h"
#include "tools/make_model/make_model.h"
#include "server/grpc/request_mapping.h"
#include "tests/fuzz/fuzz_scratch_dir.h"

namespace {

std::unique_ptr<arach::Engine> g_engine;

class NullSink : public arach::RequestObserver {
 public:
  void OnChunk(const arach::StreamChunk&) override {}
  void OnFinish(const arach::FinishInfo&) override {}
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // parse failures on invalid UTF-8 are expected, not news
  const std::string dir = arach::fuzz::ScratchDir("model").string();
  arach::MakeModelOptions options;
  options.arch = "llama";
  options.out_dir = dir;
  if (!arach::MakeModel(options).ok()) std::abort();
  arach::LoadModelOptions load;
  load.kv_blocks = 64;
  auto model = arach::LoadModelBundle(dir, load);
  if (!model.ok()) std::abort();
  arach::EngineConfig config;
  config.max_queued_requests = 8;
  auto engine = arach::Engine::Create(std::move(*model), config);
  if (!engine.ok()) std::abort();
  g_engine = std::move(*engine);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  arach::server::RequestLimits limits;
  limits.max_tokens = 8;
  arach::v1::GenerateRequest request;
  if (request.ParseFromArray(data, static_cast<int>(size))) {
    arach::Variant variant;
    variant.arach = request.variant().has_arach() && request.variant().arach();
    if (request.variant().has_arach_offset()) variant.arach_offset = request.variant().arach_offset();
    std::string prompt_field;
    auto mapped = arach::server::ToEngineRequest(*g_engine, limits, request, variant, &prompt_field);
    if (mapped.ok()) {
      auto id = g_engine->Submit(std::move(*mapped), std::make_shared<NullSink>(), [&](absl::string_view field) {
        return arach::server::GrpcFieldName(field, prompt_field);
      });
      if (id.ok()) g_engine->Cancel(*id);
    }
  }
  arach::v1::ScoreRequest score;
  if (score.ParseFromArray(data, static_cast<int>(size))) {
    for (int i = 0; i < score.inputs_size(); ++i) {
      const auto& input = score.inputs(i);
      std::string prompt_field;
      auto ids = arach::server::PromptIds(*g_engine, limits, "inputs", input.input_case() == arach::v1::ScoreInput::kText,
                                          input.text(), input.input_case() == arach::v1::ScoreInput::kTokenIds, input.token_ids(),
                                          &prompt_field);
      if (!ids.ok()) continue;
      arach::EngineRequest r;
      r.kind = arach::RequestKind::kScore;
      r.prompt = std::move(*ids);
      auto id = g_engine->Submit(std::move(r), std::make_shared<NullSink>());
      if (id.ok()) g_engine->Cancel(*id);
    }
  }
  return 0;
}
