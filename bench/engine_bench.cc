// Serving throughput of the Engine (scheduler, continuous batching, sampling; on --device cuda also step graphs and
// sampling on the GPU), without gRPC: closed-loop clients at several concurrencies submit requests (fixed prompt
// and output lengths, one variant); prints requests/s, prompt and output tokens/s and TTFT / TPOT percentiles per
// concurrency. With --score the requests are score requests (every prompt position's log-prob), as arach-run score,
// echo and the gRPC Score call send; --prompt_top_logprobs N asks each position's N most likely tokens too. With
// --embed they are embedding requests (the prompt's pooled hidden states), as /v1/embeddings and gRPC Embed send;
// --pooling pools them as a Sentence-Transformers folder would say (mean pooling reads every prompt row).
//
// With --json_schema every request's output is held to that schema (structured output): the figures then include
// the mask's cost (bench/schemas/nested.json never completes within --max_tokens, so every request generates them all).
//
// Greedy unless --temperature (with --top_k, --top_p) says otherwise. --predict gives every request its own output as
// its prediction (speculative decoding where the prediction is right throughout; --prediction_edits N changes every
// Nth of its tokens); --prompt_lookup_tokens N drafts by prompt lookup.
//
//   build/bench/engine_bench [--device cpu|cuda] [--preset gpt2/124m] [--concurrency 1,4,16] [--prompt_len 128] [--max_tokens 32]
//                            [--json_schema bench/schemas/nested.json] [--shared_prefix 1024] [--score] [--prompt_top_logprobs 20]
//                            [--embed [--pooling mean]] [--temperature 1 --top_p 0.9] [--predict] [--prompt_lookup_tokens 4]
//                            [--lora_rank 16 [--lora_adapters 8 [--lora_slots 2]]]
// With --lora_rank every request runs with a random LoRA adapter of that rank on every projection (the cost of
// serving an adapter unmerged: two more GEMMs per projection on its rows, no step graph on a GPU); --lora_adapters N
// spreads the requests over N adapters, and --lora_slots M < N keeps only M on the device (the server's --max_loras
// below --max_cpu_loras): the figures then include the swaps and the requests kept waiting for an adapter's turn,
// and each row says how many of each there were.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "engine/core/percentile.h"
#include "engine/core/mapped_file.h"
#include "engine/engine.h"
#include "tools/make_model/make_lora.h"


namespace arach::bench {
namespace {

// Closed loop: each finished request immediately starts the next one of its client.
class Driver : public std::enable_shared_from_this<Driver> {
 public:
  // `request(i)`: the i-th request submitted.
  Driver(Engine& engine, int clients, int per_client, std::function<EngineRequest(int)> request)
      : engine_(engine), remaining_(clients * per_client), total_(clients * per_client), request_(std::move(request)) {}

  struct Result {
    double seconds = 0;
    std::vector<FinishInfo> finished;
  };

  Result Run(int clients) {
    start_ = Clock::now();
    for (int c = 0; c < clients; ++c) Launch();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return static_cast<int>(result_.finished.size()) == total_; });
    result_.seconds = Seconds(start_);
    return result_;
  }

 private:
  // Holds the driver alive while the engine still holds the observer.
  class Observer : public RequestObserver {
   public:
    explicit Observer(std::shared_ptr<Driver> d) : d_(std::move(d)) {}
    void OnChunk(const StreamChunk&) override {}
    void OnFinish(const FinishInfo& info) override { d_->Finished(info); }

   private:
    std::shared_ptr<Driver> d_;
  };

  void Launch() {
    int index;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (remaining_ == 0) return;
      index = total_ - remaining_--;
    }
    auto id = engine_.Submit(request_(index), std::make_shared<Observer>(shared_from_this()));
    if (!id.ok()) {
      std::fprintf(stderr, "submit: %s\n", id.status().ToString().c_str());
      FinishInfo failed;
      failed.reason = FinishReason::kError;
      Finished(failed);
    }
  }
  // Runs on the engine's thread (Submit only queues).
  void Finished(const FinishInfo& info) {
    Launch();
    std::lock_guard<std::mutex> lock(mutex_);
    result_.finished.push_back(info);
    done_.notify_all();
  }

  Engine& engine_;
  int remaining_;
  const int total_;
  std::function<EngineRequest(int)> request_;
  Clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable done_;
  Result result_;
};

// The tokens `request` generates, waited for.
absl::StatusOr<std::vector<int32_t>> GenerateOnce(Engine& engine, EngineRequest request) {
  class Collect : public RequestObserver {
   public:
    void OnChunk(const StreamChunk& chunk) override {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const SampledToken& t : chunk.tokens) tokens_.push_back(t.token);
    }
    void OnFinish(const FinishInfo& info) override {
      std::lock_guard<std::mutex> lock(mutex_);
      status_ = info.status;
      finished_ = true;
      done_.notify_all();
    }
    absl::StatusOr<std::vector<int32_t>> Wait() {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return finished_; });
      if (!status_.ok()) return status_;
      return tokens_;
    }

   private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::vector<int32_t> tokens_;
    absl::Status status_;
    bool finished_ = false;
  };
  auto collect = std::make_shared<Collect>();
  absl::StatusOr<uint64_t> id = engine.Submit(std::move(request), collect);
  if (!id.ok()) return id.status();
  return collect->Wait();
}

int Run() {
  const absl::StatusOr<std::vector<int>> concurrency = PositiveCounts("concurrency", absl::GetFlag(FLAGS_concurrency));
  if (!concurrency.ok()) {
    std::fprintf(stderr, "%s\n", concurrency.status().ToString().c_str());
    return 2;
  }
  const std::vector<int>& levels = *concurrency;
  const absl::StatusOr<std::string> folder = ModelFolderFromFlags();
  if (!folder.ok()) {
    std::fprintf(stderr, "%s\n", folder.status().ToString().c_str());
    return 1;
  }
  const std::string& dir = *folder;
  absl::StatusOr<LoadModelOptions> base_load = LoadOptionsFromFlags(/*read_device=*/true);
  if (!base_load.ok()) {
    std::fprintf(stderr, "%s\n", base_load.status().ToString().c_str());
    return 2;
  }
  LoadModelOptions load = *base_load;
  load.default_kv_sequences = *std::max_element(levels.begin(), levels.end());
  const int lora_rank = absl::GetFlag(FLAGS_lora_rank);
  const int lora_adapters = lora_rank > 0 ? absl::GetFlag(FLAGS_lora_adapters) : 0;
  const int lora_slots = absl::GetFlag(FLAGS_lora_slots);
  if (lora_rank > 0 && (lora_adapters < 1 || lora_slots < 0)) {
    std::fprintf(stderr, "--lora_adapters must be 1 or more and --lora_slots 0 or more\n");
    return 2;
  }
  for (int a = 0; a < lora_adapters; ++a) {  // random adapters on every projection, which the requests name in turn
    RandomLoraOptions lora;
    lora.r = lora_rank;
    lora.alpha = 2.0 * lora_rank;
    lora.seed = static_cast<uint64_t>(a) + 1;
    const std::string lora_dir = absl::StrCat(absl::GetFlag(FLAGS_scratch), "/lora-r", lora_rank, "-s", a + 1, "-",
                                              std::filesystem::path(dir).filename().string());
    if (absl::Status written = MakeRandomLora(dir, lora, lora_dir); !written.ok()) {
      std::fprintf(stderr, "--lora_rank: %s\n", written.ToString().c_str());
      return 1;
    }
    load.lora_modules.push_back({absl::StrCat("bench", a), lora_dir});
  }
  if (lora_slots > 0 && lora_slots < lora_adapters) {
    load.lora_limits = LoraLimits{.max_loras = lora_slots, .max_cpu_loras = lora_adapters, .max_rank = lora_rank};
  }
  auto model = LoadModelBundle(dir, load);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  if (const std::string pooling = absl::GetFlag(FLAGS_pooling); !pooling.empty()) {  // as a Sentence-Transformers folder would say
    const PoolingMode modes[] = {PoolingMode::kLastToken, PoolingMode::kMean, PoolingMode::kFirstToken};
    const auto* mode = std::find_if(std::begin(modes), std::end(modes), [&](PoolingMode m) { return pooling == PoolingModeName(m); });
    if (mode == std::end(modes) || !absl::GetFlag(FLAGS_embed)) {
      std::fprintf(stderr, "--pooling: last_token, mean or first_token, with --embed\n");
      return 2;
    }
    model->embedding_config.pooling = *mode;
  }
  const std::string device = model->runner->backend().Describe();
  const int vocab = model->config.vocab_size;
  EngineConfig config;
  config.max_num_seqs = *std::max_element(levels.begin(), levels.end());
  config.max_num_batched_tokens = absl::GetFlag(FLAGS_max_num_batched_tokens);
  const int shared_prefix = std::clamp(absl::GetFlag(FLAGS_shared_prefix), 0, absl::GetFlag(FLAGS_prompt_len) - 1);
  config.enable_prefix_caching = shared_prefix > 0;  // else identical prompts would be served from the cache
  config.prediction_draft_tokens = absl::GetFlag(FLAGS_prediction_draft_tokens);
  config.prompt_lookup_tokens = absl::GetFlag(FLAGS_prompt_lookup_tokens);
  config.speculative_disable_by_batch_size = absl::GetFlag(FLAGS_speculative_disable_by_batch_size);
  const bool predict = absl::GetFlag(FLAGS_predict);
  if (predict && shared_prefix > 0) {
    std::fprintf(stderr, "--predict needs requests that are all alike (no --shared_prefix)\n");
    return 2;
  }
  auto engine = Engine::Create(std::move(*model), config);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 1;
  }
  auto variant = ParseVariantName(absl::GetFlag(FLAGS_variant));
  if (!variant.ok()) {
    std::fprintf(stderr, "%s\n", variant.status().ToString().c_str());
    return 2;
  }
  EngineRequest request;
  for (int i = 0; i < absl::GetFlag(FLAGS_prompt_len); ++i) request.prompt.push_back((i * 7919 + 17) % vocab);
  // Request i: the shared prefix, then tokens of its own (all of them the same when there is no shared prefix).
  auto request_number = [&request, shared_prefix, vocab, lora_adapters](int i) {
    EngineRequest r = request;
    if (lora_adapters > 0) r.lora = absl::StrCat("bench", ((i % lora_adapters) + lora_adapters) % lora_adapters);
    if (shared_prefix > 0) {
      for (size_t t = static_cast<size_t>(shared_prefix); t < r.prompt.size(); ++t) {
        r.prompt[t] = static_cast<int32_t>((static_cast<int64_t>(i + 1) * 104729 + static_cast<int64_t>(t) * 7919) % vocab);
      }
    }
    return r;
  };
  request.sampling.temperature = absl::GetFlag(FLAGS_temperature);
  request.sampling.top_k = absl::GetFlag(FLAGS_top_k);
  request.sampling.top_p = absl::GetFlag(FLAGS_top_p);
  request.sampling.seed = 1;  // each request's draws the same from run to run
  request.sampling.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  request.sampling.ignore_eos = true;
  request.variant = *variant;
  const bool score = absl::GetFlag(FLAGS_score), embed = absl::GetFlag(FLAGS_embed);
  if (score && embed) {
    std::fprintf(stderr, "--score and --embed: give one\n");
    return 2;
  }
  if (score) request.kind = RequestKind::kScore;
  if (embed) request.kind = RequestKind::kEmbed;
  request.prompt_top_logprobs = absl::GetFlag(FLAGS_prompt_top_logprobs);
  const std::string schema_file = absl::GetFlag(FLAGS_json_schema);
  if (!schema_file.empty()) {
    absl::StatusOr<std::string> schema = ReadFileToString(schema_file);
    if (!schema.ok()) {
      std::fprintf(stderr, "--json_schema: %s\n", schema.status().ToString().c_str());
      return 2;
    }
    request.constraint = OutputConstraint::JsonSchema(std::move(*schema), /*strict=*/false);
  }

  {  // warm-up: first-use allocations and thread start-up stay out of the figures
    auto warm = std::make_shared<Driver>(**engine, 1, 1, [&](int) {  // nothing of it in the cache for the measured ones
      EngineRequest r = request_number(-1);
      for (int32_t& t : r.prompt) t = (t + 1) % vocab;
      return r;
    });
    warm->Run(1);
  }
  if (predict) {  // the requests' output (all alike, seeded), as their prediction
    absl::StatusOr<std::vector<int32_t>> output = GenerateOnce(**engine, request_number(0));
    if (!output.ok()) {
      std::fprintf(stderr, "--predict: %s\n", output.status().ToString().c_str());
      return 1;
    }
    request.prediction = std::move(*output);
    if (const int every = absl::GetFlag(FLAGS_prediction_edits); every > 0) {
      for (size_t t = static_cast<size_t>(every) - 1; t < request.prediction.size(); t += static_cast<size_t>(every)) {
        request.prediction[t] = (request.prediction[t] + 1) % vocab;
      }
    }
  }
  const std::string kind = embed    ? absl::StrCat("embedding requests (", PoolingModeName((*engine)->embedding_config().pooling), " pooling)")
                           : !score ? "generations"
                           : request.prompt_top_logprobs == 0
                               ? "score requests"
                               : absl::StrCat("score requests with ", request.prompt_top_logprobs, " alternatives");
  std::printf("# engine_bench: %s on %s; variant %s%s, %s, prompt %d (%d shared), %d new tokens, %d requests per client, output %s\n",
              dir.c_str(), device.c_str(), variant->Name().c_str(),
              lora_rank == 0 ? ""
                             : absl::StrCat(" with rank-", lora_rank, " LoRAs on every projection (", lora_adapters, " adapters, ",
                                            lora_slots > 0 && lora_slots < lora_adapters ? lora_slots : lora_adapters,
                                            " on the device)").c_str(),
              kind.c_str(),
              absl::GetFlag(FLAGS_prompt_len), shared_prefix, score || embed ? 0 : absl::GetFlag(FLAGS_max_tokens),
              absl::GetFlag(FLAGS_requests_per_client), schema_file.empty() ? "free" : ("held to " + schema_file).c_str());
  if (predict || config.prompt_lookup_tokens > 0) {
    const int edits = absl::GetFlag(FLAGS_prediction_edits);
    const std::string source = !predict     ? "prompt lookup"
                               : edits == 0 ? "each request's own output as its prediction"
                                            : absl::StrCat("each request's own output with every ", edits, "th token changed as its prediction");
    std::printf("# speculative decoding: %s, up to %d draft tokens a step\n", source.c_str(),
                predict ? config.prediction_draft_tokens : config.prompt_lookup_tokens);
  }
  // Prompt-only requests (score, embed) generate nothing: their first columns are each request's whole latency.
  const bool prompt_only = score || embed;
  std::printf("%11s %9s %10s %13s %13s %10s %10s %10s %11s %11s %11s\n", "concurrency", "requests", "req/s", "prompt tok/s",
              "out tok/s", prompt_only ? "lat p50" : "TTFT p50", prompt_only ? "lat p90" : "TTFT p90", prompt_only ? "lat p99" : "TTFT p99",
              "TPOT p50", "TPOT p90", "TPOT p99");
  for (int clients : levels) {
    const EngineStats before = (*engine)->stats();
    auto driver = std::make_shared<Driver>(**engine, clients, absl::GetFlag(FLAGS_requests_per_client), request_number);
    const Driver::Result result = driver->Run(clients);
    std::vector<double> ttft, tpot;
    int64_t prompt_tokens = 0, tokens = 0;
    for (const FinishInfo& f : result.finished) {
      ttft.push_back((prompt_only ? f.timings.total_seconds : f.timings.time_to_first_token_seconds) * 1e3);
      tpot.push_back(f.timings.time_per_output_token_seconds * 1e3);
      prompt_tokens += f.usage.prompt_tokens;
      tokens += f.usage.completion_tokens;
    }
    std::printf("%11d %9zu %10.2f %13.1f %13.1f %8.1fms %8.1fms %8.1fms %9.2fms %9.2fms %9.2fms\n", clients,
                result.finished.size(), result.finished.size() / result.seconds, prompt_tokens / result.seconds,
                tokens / result.seconds, Percentile(ttft, 0.5),
                Percentile(ttft, 0.9), Percentile(ttft, 0.99), Percentile(tpot, 0.5), Percentile(tpot, 0.9),
                Percentile(tpot, 0.99));
    if (lora_slots > 0 && lora_slots < lora_adapters) {
      const EngineStats after = (*engine)->stats();  // (published after each step: the last step's may be missing)
      std::printf("%11s %lld adapter swaps, %lld admissions put off for an adapter's turn\n", "",
                  static_cast<long long>(after.lora_swap_ins - before.lora_swap_ins),
                  static_cast<long long>(after.lora_deferred_admissions - before.lora_deferred_admissions));
    }
    if (predict || config.prompt_lookup_tokens > 0) {
      int64_t drafted = 0, kept = 0;
      for (const FinishInfo& f : result.finished) {
        drafted += f.usage.draft_tokens;
        kept += f.usage.accepted_draft_tokens;
      }
      std::printf("%11s %lld draft tokens, %lld kept (%.1f%%)\n", "", static_cast<long long>(drafted), static_cast<long long>(kept),
                  drafted > 0 ? 100.0 * static_cast<double>(kept) / static_cast<double>(drafted) : 0.0);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) { return arach::bench::BenchmarkMain(argc, argv, {"engine_bench", "throughput and latency through the serving engine", arach::bench::kEngineBenchFlags}, arach::bench::Run); }
