// Prometheus metrics of the server (prometheus-cpp), labelled by variant (base | arach | skip |
// arach+skip) so that a dashboard shows the variants side by side, and every series by `model` (the served
// model's name) so that a fleet's dashboards can tell models apart. Request-level series are updated as
// requests finish; engine gauges and counters are read from Engine::stats() when /metrics is scraped.
// The HTTP server (server/http/) serves Scrape() at /metrics.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "engine/engine.h"

namespace arach::server {

// The priority class of a request's priority, the `priority` label of the queue and TTFT histograms:
// "high" (< 0), "normal" (0) or "low" (> 0).
const char* PriorityClass(int priority);

class ServerMetrics {
 public:
  // `model`: the served model's name, the `model` label of every series.
  static std::unique_ptr<ServerMetrics> Create(const std::string& model = "");

  // The Prometheus text exposition of every series and of the engine's state.
  std::string Scrape() const;

  // Reads engine gauges and counters at scrape time from now on.
  void AttachEngine(const Engine* engine);
  // arach_build_info{version, git_sha, device, backend} once the model is loaded (`backend`: the
  // backend's description, e.g. the CPU threads and why).
  void SetDevice(const std::string& device, const std::string& backend);
  // A finished generation request of the API key `key` (kOpenCallerName on an open server).
  void RecordGenerate(const Variant& variant, const FinishInfo& info, const std::string& key);
  // A finished Score request of `tokens` scored tokens that took `seconds`.
  void RecordScore(const Variant& variant, int64_t prompt_tokens, double seconds);
  // A finished embedding request (one input of /v1/embeddings) of `prompt_tokens` that took `seconds`.
  void RecordEmbedding(const Variant& variant, int64_t prompt_tokens, double seconds);
  // A pair a cross-encoder scored (RequestKind::kClassify) of `prompt_tokens` that took `seconds`.
  void RecordClassification(const Variant& variant, int64_t prompt_tokens, double seconds);
  // A finished request of `kind` that ran with a LoRA adapter (FinishInfo::lora; nothing for the base model): its
  // requests by adapter, kind and finish reason, and its tokens by adapter.
  void RecordLora(RequestKind kind, const FinishInfo& info);
  // The Responses API's background responses running now.
  void SetBackgroundResponses(int64_t running);
  // The Responses API's stored responses now (--responses_store_bytes): how many and their bytes.
  void SetStoredResponses(size_t count, size_t bytes);
  // A stored response dropped for room (the least recently used), or one not kept because alone it exceeds the budget.
  void RecordStoredResponseEvicted();
  // A Tokenize or Detokenize call (`rpc`) that took `seconds`.
  void RecordTokenizerCall(const std::string& rpc, double seconds);
  // The attention diagnostics of a finished request (RecordGenerate records its own).
  void RecordAttention(const Variant& variant, const AttentionDiagnostics& attention);
  // A shadow comparison of a request served by `served` against `against` (server/shadow_scorer.h).
  void RecordShadow(const Variant& served, const Variant& against, double logprob_delta, double top1_agreement);
  // Shadow work that was not done: "saturated" (the bound), "cancelled", "error".
  void RecordShadowDropped(const std::string& reason);
  // A request of `key` refused before it reached the engine (code name: invalid_argument, resource_exhausted,
  // unauthenticated, ...; key "unknown" when no valid key was presented).
  void RecordRejected(const std::string& code, const std::string& key);
  // A request of `key` refused by its rate limits: reason "rpm" or "tpm".
  void RecordRateLimited(const std::string& key, const std::string& reason);
  // Creates the per-key series of these keys up front (their names only; secrets never reach metrics).
  void DeclareKeys(const std::vector<std::string>& keys);
  void RecordStep(const StepReport& step);
  // Creates the assignment series of every arm up front (so they are exported before the first request).
  void DeclareExperimentArms(const std::vector<std::pair<std::string, Variant>>& arms);
  // A request assigned by the A/B experiment.
  void RecordAssignment(const std::string& arm, const Variant& variant);
  // An answered HTTP request: its route ("/v1/completions", "other" for unknown paths), status and the
  // variant that served it ("" when none did).
  void RecordHttpRequest(const std::string& route, int status, const std::string& variant);

 private:
  struct PerVariant {
    std::map<std::string, prometheus::Histogram*> ttft;   // by priority class (PriorityClass)
    prometheus::Histogram* tpot;
    prometheus::Histogram* e2e;
    std::map<std::string, prometheus::Histogram*> queue;  // by priority class
    prometheus::Counter* prompt_tokens;
    prometheus::Counter* generation_tokens;
    prometheus::Counter* score_requests;
    prometheus::Counter* embedding_inputs;
    prometheus::Counter* classified_pairs;
    prometheus::Histogram* generated_logprob;
    prometheus::Histogram* prompt_perplexity;
    prometheus::Histogram* sink_mass;
    prometheus::Histogram* request_prompt_tokens;
    prometheus::Histogram* request_generation_tokens;
    prometheus::Histogram* request_max_tokens;
    prometheus::Histogram* prefill_time;
    prometheus::Histogram* decode_time;
    prometheus::Histogram* score_latency;
    prometheus::Histogram* embedding_latency;
  };
  ServerMetrics() = default;
  PerVariant& For(const Variant& variant);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> engine_collector_;
  std::map<std::string, PerVariant> variants_;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;  // by variant, finish reason and key
  prometheus::Family<prometheus::Counter>* lora_requests_ = nullptr;  // by adapter, kind and finish reason
  prometheus::Family<prometheus::Counter>* lora_tokens_ = nullptr;    // by adapter and type (prompt, generation)
  prometheus::Family<prometheus::Counter>* rejected_ = nullptr;
  prometheus::Family<prometheus::Counter>* rate_limited_ = nullptr;
  prometheus::Family<prometheus::Counter>* assignments_ = nullptr;
  prometheus::Family<prometheus::Counter>* http_requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* shadow_delta_ = nullptr;
  prometheus::Family<prometheus::Histogram>* shadow_agreement_ = nullptr;
  prometheus::Family<prometheus::Counter>* shadow_dropped_ = nullptr;
  prometheus::Histogram* batch_size_ = nullptr;
  prometheus::Histogram* iteration_tokens_ = nullptr;
  prometheus::Family<prometheus::Histogram>* tokenizer_latency_ = nullptr;
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
  prometheus::Gauge* background_responses_ = nullptr;
  prometheus::Gauge* stored_responses_ = nullptr;
  prometheus::Gauge* stored_response_bytes_ = nullptr;
  prometheus::Counter* stored_responses_evicted_ = nullptr;
  std::string model_;
  prometheus::Histogram* step_duration_ = nullptr;
};

}  // namespace arach::server
