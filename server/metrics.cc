#include "server/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <sstream>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/build_info.h"

namespace arach::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

const char* kVariants[] = {"base", "arach", "skip", "arach+skip"};
const char* kFinishReasons[] = {"stop", "length", "cancelled", "deadline", "error"};

// Log-prob differences per token, both signs.
Histogram::BucketBoundaries ShadowDeltaBuckets() {
  return {-2, -1, -0.5, -0.25, -0.1, -0.05, -0.02, -0.01, 0, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2};
}
Histogram::BucketBoundaries AgreementBuckets() { return {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0}; }

Histogram::BucketBoundaries Exponential(double start, double factor, int count) {
  Histogram::BucketBoundaries b;
  for (double v = start; count-- > 0; v *= factor) b.push_back(v);
  return b;
}

// Engine state read at scrape time.
class EngineCollector : public prometheus::Collectable {
 public:
  void Attach(const Engine* engine) { engine_.store(engine); }

  std::vector<prometheus::MetricFamily> Collect() const override {
    const Engine* engine = engine_.load();
    EngineStats s;
    if (engine != nullptr) s = engine->stats();
    std::vector<prometheus::MetricFamily> out;
    auto gauge = [&](const char* name, const char* help, double value) {
      prometheus::MetricFamily f{name, help, prometheus::MetricType::Gauge, {}};
      prometheus::ClientMetric m;
      m.gauge.value = value;
      f.metric.push_back(m);
      out.push_back(std::move(f));
    };
    auto counter = [&](const char* name, const char* help, double value) {
      prometheus::MetricFamily f{name, help, prometheus::MetricType::Counter, {}};
      prometheus::ClientMetric m;
      m.counter.value = value;
      f.metric.push_back(m);
      out.push_back(std::move(f));
    };
    gauge("arach_num_requests_running", "Requests in the running batch (holding KV blocks).", s.num_running);
    gauge("arach_num_requests_waiting", "Requests queued for admission, including preempted ones.", s.num_waiting);
    gauge("arach_kv_cache_usage_ratio", "Fraction of KV-cache blocks held by requests (cached free blocks excluded).",
          s.kv_blocks_total > 0 ? static_cast<double>(s.kv_blocks_used) / s.kv_blocks_total : 0.0);
    gauge("arach_kv_cache_blocks_total", "KV-cache blocks in the pool.", s.kv_blocks_total);
    if (engine != nullptr) {
      gauge("arach_engine_healthy", "1 while the engine is healthy; 0 while its steps keep failing or one has stalled (/live 503).",
            engine->Health().ok() ? 1.0 : 0.0);
      counter("arach_engine_failed_steps_total", "Engine steps whose forward failed (every request of the step ended with the error).",
              static_cast<double>(s.failed_steps));
    }
    if (engine != nullptr) {
      gauge("arach_kv_cache_bytes_per_token", "Bytes one cached token takes (K and V over all layers; --kv_cache_dtype).",
            static_cast<double>(engine->kv_bytes_per_token()));
    }
    const double block_tokens = engine != nullptr ? engine->kv_block_size() : 0;
    if (engine != nullptr) {
      // The model server protocol's cache_config_info (as vLLM names its labels): what a prefix-aware endpoint
      // picker needs to model this replica's cache. num_gpu_blocks: the blocks of whatever device serves.
      prometheus::MetricFamily f{"arach_cache_config_info",
                                 "KV-cache configuration as labels (block_size in tokens, num_gpu_blocks); value 1.",
                                 prometheus::MetricType::Gauge, {}};
      prometheus::ClientMetric m;
      m.label = {{"block_size", std::to_string(engine->kv_block_size())}, {"num_gpu_blocks", std::to_string(s.kv_blocks_total)}};
      m.gauge.value = 1;
      f.metric.push_back(m);
      out.push_back(std::move(f));
    }
    const auto loaded = std::count_if(s.lora_adapters.begin(), s.lora_adapters.end(), [](const std::string& n) { return !n.empty(); });
    if (loaded > 0) {
      // The model server protocol's LoRA info (vLLM's lora_requests_info labels), for an endpoint picker's adapter
      // affinity: the adapters of running and of waiting requests, and how many adapters a batch may hold
      // (--max_loras); the value is the time it was read (the picker keeps the latest).
      // (By the name a request was made for: those still finishing on a replaced adapter's weights count under its
      // name, once beside its replacement's.)
      std::vector<std::string> running, waiting;
      const auto add = [](std::vector<std::string>& names, const std::string& name) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      };
      for (size_t i = 0; i < s.lora_request_adapters.size(); ++i) {
        if (s.lora_request_adapters[i].empty()) continue;
        if (i < s.lora_running.size() && s.lora_running[i] > 0) add(running, s.lora_request_adapters[i]);
        if (i < s.lora_waiting.size() && s.lora_waiting[i] > 0) add(waiting, s.lora_request_adapters[i]);
      }
      prometheus::MetricFamily f{"arach_lora_requests_info",
                                 "LoRA adapters of running and waiting requests and the adapters a batch may hold, as labels "
                                 "(running_lora_adapters, waiting_lora_adapters, max_lora); value: the Unix time it was read.",
                                 prometheus::MetricType::Gauge, {}};
      prometheus::ClientMetric m;
      m.label = {{"running_lora_adapters", absl::StrJoin(running, ",")},
                 {"waiting_lora_adapters", absl::StrJoin(waiting, ",")},
                 {"max_lora", std::to_string(s.lora_max_on_device > 0 ? s.lora_max_on_device : loaded)}};
      m.gauge.value = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      f.metric.push_back(m);
      out.push_back(std::move(f));
      gauge("arach_lora_adapters_loaded", "LoRA adapters registered (requests may name them).", static_cast<double>(loaded));
      gauge("arach_lora_adapters_on_device", "LoRA adapters in device memory (at most --max_loras).", s.lora_on_device);
      counter("arach_lora_swap_ins_total",
              "LoRA adapters put on the device from host memory because a request needed them (--max_cpu_loras above --max_loras).",
              static_cast<double>(s.lora_swap_ins));
      counter("arach_lora_deferred_admissions_total",
              "Admissions put off by a step because the request's LoRA adapter had no place beside those in use (--max_loras).",
              static_cast<double>(s.lora_deferred_admissions));
    }
    counter("arach_prefix_cache_queried_tokens_total", "Prompt tokens looked up in the prefix cache (in full blocks).",
            static_cast<double>(s.prefix_cache_queries) * block_tokens);
    counter("arach_prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache (reused K/V).",
            static_cast<double>(s.prefix_cache_hits) * block_tokens);
    counter("arach_prefix_cache_deferred_admissions_total",
            "Admissions put off by a step because a running request was computing the next prompt block (reused then).",
            static_cast<double>(s.deferred_admissions));
    counter("arach_preemptions_total", "Running requests preempted for lack of KV blocks (recomputed later).",
            static_cast<double>(s.preemptions));
    counter("arach_spec_decode_draft_tokens_total",
            "Speculative draft tokens computed and checked (from predictions, and prompt lookup where enabled).",
            static_cast<double>(s.draft_tokens));
    counter("arach_spec_decode_accepted_tokens_total",
            "Speculative draft tokens kept: generated tokens that took no engine step of their own.",
            static_cast<double>(s.accepted_draft_tokens));
    return out;
  }

 private:
  std::atomic<const Engine*> engine_{nullptr};
};

}  // namespace

std::unique_ptr<ServerMetrics> ServerMetrics::Create(const std::string& model) {
  std::unique_ptr<ServerMetrics> m(new ServerMetrics());
  m->model_ = model;
  m->registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Registry& r = *m->registry_;
  m->requests_ = &BuildCounter().Name("arach_requests_total")
                      .Help("Generation requests finished, by variant, finish reason (stop, length, cancelled, deadline, error) "
                            "and API key (\"open\" on a server without keys).")
                      .Register(r);
  auto& ttft = BuildHistogram().Name("arach_time_to_first_token_seconds")
                   .Help("Time from arrival to the first generated token, by variant and priority class (high, normal, low).")
                   .Register(r);
  auto& tpot = BuildHistogram().Name("arach_time_per_output_token_seconds")
                   .Help("Mean time between generated tokens after the first, per request, by variant.").Register(r);
  auto& e2e = BuildHistogram().Name("arach_e2e_request_latency_seconds")
                  .Help("Time from arrival to the end of a Generate request, by variant.").Register(r);
  auto& queue = BuildHistogram().Name("arach_request_queue_time_seconds")
                    .Help("Time a request waited before it was first scheduled, by variant and priority class (high, normal, low).")
                    .Register(r);
  auto& prompt = BuildCounter().Name("arach_prompt_tokens_total")
                     .Help("Prompt tokens of finished Generate, Score and embedding requests, by variant.").Register(r);
  auto& generation = BuildCounter().Name("arach_generation_tokens_total")
                         .Help("Tokens generated, by variant.").Register(r);
  auto& score = BuildCounter().Name("arach_score_requests_total").Help("Score requests answered, by variant.").Register(r);
  auto& embedding = BuildCounter().Name("arach_embedding_inputs_total").Help("Inputs embedded (/v1/embeddings, gRPC Embed; each text of /v1/rerank and /v1/score), by variant.").Register(r);
  auto& classified = BuildCounter().Name("arach_classifier_inputs_total")
                         .Help("Inputs a classifier scored (--classifier_from_token: each pair of /v1/rerank and /v1/score, each input of "
                               "/v1/classify), by variant.")
                         .Register(r);
  auto& generated_logprob = BuildHistogram().Name("arach_generated_token_logprob")
                                .Help("Mean log-prob of the tokens a request generated (raw model distribution), by variant: "
                                      "a quality signal, higher is more confident.")
                                .Register(r);
  auto& prompt_ppl = BuildHistogram().Name("arach_prompt_perplexity")
                         .Help("Perplexity of each Generate prompt under its serving variant (when --prompt_perplexity is on).")
                         .Register(r);
  auto& sink_mass = BuildHistogram().Name("arach_attention_sink_mass")
                        .Help("Per diagnosed request (--diagnostics_sample_rate, or asked for), the mean over layers and "
                              "heads of the attention its prompt rows put on the first token (the attention sink), by variant.")
                        .Register(r);
  m->shadow_delta_ = &BuildHistogram().Name("arach_shadow_logprob_delta")
                          .Help("Per shadowed request (--shadow_rate): the completion's mean token log-prob under the serving "
                                "variant minus under the `against` variant, scored on the same text.")
                          .Register(r);
  m->shadow_agreement_ = &BuildHistogram().Name("arach_shadow_top1_agreement")
                              .Help("Per shadowed request: the share of completion tokens on which the serving and the "
                                    "`against` variant's most likely token agree.")
                              .Register(r);
  m->shadow_dropped_ = &BuildCounter().Name("arach_shadow_dropped_total")
                            .Help("Shadow scores not done, by reason (saturated: over the in-flight bound; cancelled; error).")
                            .Register(r);
  for (const char* reason : {"saturated", "cancelled", "error"}) m->shadow_dropped_->Add({{"reason", reason}});
  for (const char* served : kVariants) {
    for (const char* against : kVariants) {
      if (std::string(served) == against) continue;
      m->shadow_delta_->Add({{"variant", served}, {"against", against}}, ShadowDeltaBuckets());
      m->shadow_agreement_->Add({{"variant", served}, {"against", against}}, AgreementBuckets());
    }
  }
  m->assignments_ = &BuildCounter().Name("arach_experiment_assignments_total")
                         .Help("Requests assigned a variant by the A/B experiment, by arm and variant.").Register(r);
  m->lora_requests_ = &BuildCounter().Name("arach_lora_requests_total")
                           .Help("Requests finished with a LoRA adapter (--lora_modules), by adapter, kind (generate, score, "
                                 "embed) and finish reason; the base model's are not counted here.")
                           .Register(r);
  m->lora_tokens_ = &BuildCounter().Name("arach_lora_tokens_total")
                         .Help("Tokens of the requests finished with a LoRA adapter, by adapter and type (prompt, generation).")
                         .Register(r);
  m->http_requests_ = &BuildCounter().Name("arach_http_requests_total")
                          .Help("HTTP requests answered, by route, status and serving variant (\"none\" when none served it).")
                          .Register(r);
  m->rejected_ = &BuildCounter().Name("arach_requests_rejected_total")
                      .Help("Requests refused before reaching the engine, by status code and API key (\"unknown\": no valid key).")
                      .Register(r);
  m->rate_limited_ = &BuildCounter().Name("arach_rate_limited_total")
                          .Help("Requests refused by their API key's limits, by key and reason (rpm: requests per minute, "
                                "tpm: tokens per minute).")
                          .Register(r);
  m->batch_size_ = &BuildHistogram().Name("arach_batch_size").Help("Sequences in each engine step.").Register(r)
                        .Add({}, Exponential(1, 2, 10));
  m->iteration_tokens_ = &BuildHistogram().Name("arach_iteration_tokens")
                              .Help("Tokens (prompt chunks and decodes) computed in each engine step.").Register(r)
                              .Add({}, Exponential(1, 2, 15));
  m->tokenizer_latency_ = &BuildHistogram().Name("arach_tokenizer_request_latency_seconds")
                               .Help("Duration of Tokenize, Detokenize and ResponseInputTokens calls, by rpc.").Register(r);
  for (const char* rpc : {"Tokenize", "Detokenize", "ResponseInputTokens"}) {
    m->tokenizer_latency_->Add({{"rpc", rpc}}, Exponential(0.0001, 2, 20));
  }
  m->build_info_ = &BuildGauge().Name("arach_build_info")
                        .Help("1, labelled with the server's version, git commit, device and backend (threads and why).")
                        .Register(r);
  m->build_info_->Add({{"version", ArachVersion()}, {"git_sha", ArachGitSha()}, {"device", ""}, {"backend", "loading"}}).Set(1);
  m->background_responses_ = &BuildGauge().Name("arach_responses_background_running")
                                  .Help("Responses API background responses running (accepted, not yet in their final state).")
                                  .Register(r)
                                  .Add({});
  m->stored_responses_ = &BuildGauge().Name("arach_responses_stored")
                              .Help("Responses API responses kept in the store (--responses_store_bytes).")
                              .Register(r)
                              .Add({});
  m->stored_response_bytes_ = &BuildGauge().Name("arach_responses_stored_bytes")
                                   .Help("Bytes the stored responses take, as the store counts them against --responses_store_bytes.")
                                   .Register(r)
                                   .Add({});
  m->stored_responses_evicted_ = &BuildCounter().Name("arach_responses_evicted_total")
                                      .Help("Stored responses dropped for room (least recently used first), or not kept since "
                                            "alone they exceed --responses_store_bytes.")
                                      .Register(r)
                                      .Add({});
  auto& request_prompt = BuildHistogram().Name("arach_request_prompt_tokens")
                             .Help("Prompt tokens of each finished generation request, by variant.").Register(r);
  auto& request_generation = BuildHistogram().Name("arach_request_generation_tokens")
                                 .Help("Tokens each finished generation request generated, by variant.").Register(r);
  auto& request_max_tokens = BuildHistogram().Name("arach_request_max_tokens")
                                 .Help("max_tokens each finished generation request asked for, by variant.").Register(r);
  auto& prefill_time = BuildHistogram().Name("arach_request_prefill_time_seconds")
                           .Help("Per request: from first scheduled to the first generated token (the prompt's compute), by variant.")
                           .Register(r);
  auto& decode_time = BuildHistogram().Name("arach_request_decode_time_seconds")
                          .Help("Per request: from the first to the last generated token, by variant.").Register(r);
  auto& embedding_latency = BuildHistogram().Name("arach_embedding_input_latency_seconds")
                                .Help("Duration of each embedded input, from its arrival to its hidden state, by variant.")
                                .Register(r);
  auto& score_latency = BuildHistogram().Name("arach_score_request_latency_seconds")
                            .Help("Duration of each Score request (all its inputs) and scoring completion, by variant.")
                            .Register(r);
  m->step_duration_ = &BuildHistogram().Name("arach_step_duration_seconds")
                           .Help("Duration of each engine step (schedule, forward, sampling).").Register(r)
                           .Add({}, Exponential(0.0005, 2, 14));
  for (const char* v : kVariants) {
    PerVariant& pv = m->variants_[v];
    // Latency buckets reach past the longest request the limits allow on a CPU (hours).
    for (const char* priority : {"high", "normal", "low"}) {
      pv.ttft[priority] = &ttft.Add({{"variant", v}, {"priority", priority}}, Exponential(0.001, 2, 24));
      pv.queue[priority] = &queue.Add({{"variant", v}, {"priority", priority}}, Exponential(0.001, 2, 24));
    }
    pv.tpot = &tpot.Add({{"variant", v}}, Exponential(0.0005, 2, 16));
    pv.e2e = &e2e.Add({{"variant", v}}, Exponential(0.01, 2, 21));
    pv.request_prompt_tokens = &request_prompt.Add({{"variant", v}}, Exponential(1, 2, 18));
    pv.request_generation_tokens = &request_generation.Add({{"variant", v}}, Exponential(1, 2, 18));
    pv.request_max_tokens = &request_max_tokens.Add({{"variant", v}}, Exponential(1, 2, 18));
    pv.prefill_time = &prefill_time.Add({{"variant", v}}, Exponential(0.001, 2, 24));
    pv.decode_time = &decode_time.Add({{"variant", v}}, Exponential(0.01, 2, 21));
    pv.score_latency = &score_latency.Add({{"variant", v}}, Exponential(0.001, 2, 24));
    pv.prompt_tokens = &prompt.Add({{"variant", v}});
    pv.generation_tokens = &generation.Add({{"variant", v}});
    pv.score_requests = &score.Add({{"variant", v}});
    pv.embedding_inputs = &embedding.Add({{"variant", v}});
    pv.classified_pairs = &classified.Add({{"variant", v}});
    pv.embedding_latency = &embedding_latency.Add({{"variant", v}}, Exponential(0.001, 2, 24));
    pv.generated_logprob = &generated_logprob.Add({{"variant", v}}, Histogram::BucketBoundaries{
                                                      -12, -10, -8, -7, -6, -5, -4.5, -4, -3.5, -3, -2.5, -2, -1.5, -1,
                                                      -0.75, -0.5, -0.25, -0.1, 0});
    pv.prompt_perplexity = &prompt_ppl.Add({{"variant", v}}, Exponential(1, 1.5, 24));
    pv.sink_mass = &sink_mass.Add({{"variant", v}}, Histogram::BucketBoundaries{0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35,
                                                                                0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0});
    // The answered generation routes, so that the family is exported (and dashboards resolve) before traffic.
    for (const char* route : {"/v1/completions", "/v1/chat/completions", "/v1/responses"}) {
      m->http_requests_->Add({{"route", route}, {"status", "200"}, {"variant", v}});
    }
  }
  m->engine_collector_ = std::make_shared<EngineCollector>();
  return m;
}

std::string ServerMetrics::Scrape() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (prometheus::MetricFamily& f : engine_collector_->Collect()) families.push_back(std::move(f));
  for (prometheus::MetricFamily& f : families) {  // the served model on every series
    for (prometheus::ClientMetric& metric : f.metric) metric.label.push_back({"model", model_});
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

void ServerMetrics::AttachEngine(const Engine* engine) { static_cast<EngineCollector&>(*engine_collector_).Attach(engine); }

void ServerMetrics::SetDevice(const std::string& device, const std::string& backend) {
  build_info_->Remove(&build_info_->Add({{"version", ArachVersion()}, {"git_sha", ArachGitSha()}, {"device", ""}, {"backend", "loading"}}));
  build_info_->Add({{"version", ArachVersion()}, {"git_sha", ArachGitSha()}, {"device", device}, {"backend", backend}}).Set(1);
}

void ServerMetrics::SetBackgroundResponses(int64_t running) { background_responses_->Set(static_cast<double>(running)); }

void ServerMetrics::SetStoredResponses(size_t count, size_t bytes) {
  stored_responses_->Set(static_cast<double>(count));
  stored_response_bytes_->Set(static_cast<double>(bytes));
}

void ServerMetrics::RecordStoredResponseEvicted() { stored_responses_evicted_->Increment(); }

void ServerMetrics::RecordTokenizerCall(const std::string& rpc, double seconds) {
  tokenizer_latency_->Add({{"rpc", rpc}}, Exponential(0.0001, 2, 20)).Observe(seconds);
}

const char* PriorityClass(int priority) { return priority < 0 ? "high" : priority == 0 ? "normal" : "low"; }

ServerMetrics::PerVariant& ServerMetrics::For(const Variant& variant) { return variants_.at(variant.Name()); }

void ServerMetrics::RecordGenerate(const Variant& variant, const FinishInfo& info, const std::string& key) {
  PerVariant& pv = For(variant);
  requests_->Add({{"variant", variant.Name()}, {"finish_reason", FinishReasonName(info.reason)}, {"key", key}}).Increment();
  pv.prompt_tokens->Increment(info.usage.prompt_tokens);
  pv.generation_tokens->Increment(info.usage.completion_tokens);
  pv.e2e->Observe(info.timings.total_seconds);
  pv.request_prompt_tokens->Observe(info.usage.prompt_tokens);
  pv.request_generation_tokens->Observe(info.usage.completion_tokens);
  pv.request_max_tokens->Observe(info.max_tokens);
  if (info.usage.completion_tokens > 0) pv.prefill_time->Observe(info.timings.prefill_seconds);
  if (info.usage.completion_tokens > 1) pv.decode_time->Observe(info.timings.decode_seconds);
  const char* priority = PriorityClass(info.priority);
  if (info.timings.queue_seconds > 0 || info.usage.completion_tokens > 0) pv.queue.at(priority)->Observe(info.timings.queue_seconds);
  if (info.usage.completion_tokens > 0) pv.ttft.at(priority)->Observe(info.timings.time_to_first_token_seconds);
  if (info.usage.completion_tokens > 1) pv.tpot->Observe(info.timings.time_per_output_token_seconds);
  if (info.mean_generated_logprob) pv.generated_logprob->Observe(*info.mean_generated_logprob);
  if (!info.prompt_logprobs.empty()) {
    double total = 0;
    for (float lp : info.prompt_logprobs) total += lp;
    pv.prompt_perplexity->Observe(std::exp(-total / static_cast<double>(info.prompt_logprobs.size())));
  }
  if (info.attention) pv.sink_mass->Observe(info.attention->MeanSinkMass());
}

void ServerMetrics::RecordLora(RequestKind kind, const FinishInfo& info) {
  if (info.lora.empty()) return;
  lora_requests_->Add({{"lora", info.lora}, {"kind", RequestKindName(kind)}, {"finish_reason", FinishReasonName(info.reason)}}).Increment();
  lora_tokens_->Add({{"lora", info.lora}, {"type", "prompt"}}).Increment(info.usage.prompt_tokens);
  lora_tokens_->Add({{"lora", info.lora}, {"type", "generation"}}).Increment(info.usage.completion_tokens);
}

void ServerMetrics::RecordAttention(const Variant& variant, const AttentionDiagnostics& attention) {
  For(variant).sink_mass->Observe(attention.MeanSinkMass());
}

void ServerMetrics::RecordShadow(const Variant& served, const Variant& against, double logprob_delta, double top1_agreement) {
  const prometheus::Labels labels = {{"variant", served.Name()}, {"against", against.Name()}};
  shadow_delta_->Add(labels, ShadowDeltaBuckets()).Observe(logprob_delta);
  shadow_agreement_->Add(labels, AgreementBuckets()).Observe(top1_agreement);
}

void ServerMetrics::RecordShadowDropped(const std::string& reason) { shadow_dropped_->Add({{"reason", reason}}).Increment(); }

void ServerMetrics::DeclareExperimentArms(const std::vector<std::pair<std::string, Variant>>& arms) {
  for (const auto& [arm, variant] : arms) assignments_->Add({{"arm", arm}, {"variant", variant.Name()}});
}

void ServerMetrics::RecordAssignment(const std::string& arm, const Variant& variant) {
  assignments_->Add({{"arm", arm}, {"variant", variant.Name()}}).Increment();
}

void ServerMetrics::RecordScore(const Variant& variant, int64_t prompt_tokens, double seconds) {
  PerVariant& pv = For(variant);
  pv.score_requests->Increment();
  pv.prompt_tokens->Increment(static_cast<double>(prompt_tokens));
  pv.score_latency->Observe(seconds);
}

void ServerMetrics::RecordEmbedding(const Variant& variant, int64_t prompt_tokens, double seconds) {
  PerVariant& pv = For(variant);
  pv.embedding_inputs->Increment();
  pv.prompt_tokens->Increment(static_cast<double>(prompt_tokens));
  pv.embedding_latency->Observe(seconds);
}

void ServerMetrics::RecordClassification(const Variant& variant, int64_t prompt_tokens, double seconds) {
  PerVariant& pv = For(variant);
  pv.classified_pairs->Increment();
  pv.prompt_tokens->Increment(static_cast<double>(prompt_tokens));
  pv.score_latency->Observe(seconds);
}

void ServerMetrics::RecordHttpRequest(const std::string& route, int status, const std::string& variant) {
  http_requests_->Add({{"route", route}, {"status", absl::StrCat(status)}, {"variant", variant.empty() ? "none" : variant}})
      .Increment();
}

void ServerMetrics::RecordRejected(const std::string& code, const std::string& key) {
  rejected_->Add({{"code", code}, {"key", key}}).Increment();
}

void ServerMetrics::RecordRateLimited(const std::string& key, const std::string& reason) {
  rate_limited_->Add({{"key", key}, {"reason", reason}}).Increment();
}

void ServerMetrics::DeclareKeys(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    for (const char* v : kVariants) {
      for (const char* reason : kFinishReasons) requests_->Add({{"variant", v}, {"finish_reason", reason}, {"key", key}});
    }
    for (const char* code : {"invalid_argument", "resource_exhausted", "failed_precondition", "permission_denied", "unavailable",
                             "deadline_exceeded", "cancelled", "internal"}) {
      rejected_->Add({{"code", code}, {"key", key}});
    }
  }
  rejected_->Add({{"code", "unauthenticated"}, {"key", "unknown"}});
}

void ServerMetrics::RecordStep(const StepReport& step) {
  batch_size_->Observe(step.num_sequences);
  iteration_tokens_->Observe(step.num_tokens);
  step_duration_->Observe(step.seconds);
}

}  // namespace arach::server
