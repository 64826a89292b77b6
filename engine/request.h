// What callers submit to the Engine and what it streams back to them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/attention_diagnostics.h"
#include "engine/constraint/output_constraint.h"
#include "engine/core/field_error.h"
#include "engine/variant/variant.h"
#include "engine/model/model_config.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampling_params.h"

namespace arach {

using Clock = std::chrono::steady_clock;

enum class RequestKind {
  kGenerate,  // generate tokens after the prompt (SamplingParams apply)
  kScore,     // only the prompt's own log-probs: FinishInfo::prompt_logprobs, no token is generated
  kEmbed,     // only the prompt's pooled hidden states (EmbeddingConfig): FinishInfo::embedding, no token is generated
  // Only the logits of EngineRequest::class_token_ids at the prompt's last position: FinishInfo::class_logits (a
  // causal LM as a classifier or cross-encoder, e.g. Qwen3-Reranker's "no" and "yes"); no token is generated.
  kClassify,
};
const char* RequestKindName(RequestKind kind);  // "generate", "score", "embed", "classify"

// How a request competes for the engine: live requests first; background ones (shadow scoring) only use
// what live requests leave in a step, are preempted first, and do not count against the queue bound
// (their submitter bounds them). Among live requests, `priority` orders them.
enum class RequestClass { kLive, kBackground };

// The range of EngineRequest::priority.
inline constexpr int kMaxPriorityMagnitude = 1000000;

struct EngineRequest {
  RequestKind kind = RequestKind::kGenerate;
  std::vector<int32_t> prompt;             // token ids (the caller tokenizes; see Engine::tokenizer())
  SamplingParams sampling;                 // generation only
  Variant variant;
  std::optional<Clock::time_point> deadline;  // the request is dropped with DEADLINE_EXCEEDED after it
  // With prompt log-probs: this many most likely alternatives at each prompt position too (0..20).
  int prompt_top_logprobs = 0;
  // With prompt log-probs: the first generated chunk carries them too (StreamChunk::prompt_scores), for a stream
  // that writes them before the generated tokens.
  bool prompt_scores_in_first_chunk = false;
  // Diagnostics: where the prompt's attention went (FinishInfo::attention). The prompt is computed in
  // full then (no prefix-cache reuse), so that every row counts.
  bool attention_diagnostics = false;
  RequestClass request_class = RequestClass::kLive;
  // Lower first (vLLM's convention): admitted and scheduled by priority, then arrival; preempted lowest
  // priority (latest arrival) first. In [-kMaxPriorityMagnitude, kMaxPriorityMagnitude].
  int priority = 0;
  // Generation: what the output must match (structured output; Engine::Submit compiles it, errors name
  // the field "constraint").
  OutputConstraint constraint;
  // Generation: keep the sequence, each generated token's raw log-prob and each step's argmax
  // (FinishInfo::generated), e.g. to compare the output with another variant's scores.
  bool keep_generated = false;
  // The prefix-cache namespace (vLLM's cache_salt): the prompt's cached blocks are reused only by requests with
  // the same salt, and blocks it computes are found only by them; empty: the shared namespace. Not secret-checked
  // here: a salt should be long and unpredictable (e.g. 32 random bytes in base64) and kept by its tenant.
  std::string cache_salt;
  // Generation: the output as the caller expects it to be, mostly (OpenAI's predicted outputs: a file to edit, a
  // document to rewrite). Speculative decoding drafts from it (EngineConfig::prediction_draft_tokens); the output is
  // the same with or without it, only sooner where it is right.
  std::vector<int32_t> prediction;
  // The LoRA adapter the request runs with (Engine::lora_names(); empty: the base model). Its prefix-cache blocks are
  // those of that adapter alone.
  std::string lora;
  // kClassify: the tokens whose logits the request returns (1 to kMaxClassTokens).
  std::vector<int32_t> class_token_ids;
  static constexpr int kMaxClassTokens = 16;

  // Whether the forward must return the log-probs of the prompt's tokens.
  bool wants_prompt_logprobs() const { return kind == RequestKind::kScore || sampling.prompt_logprobs; }
};

// The checks every request passes before it is queued, whatever API it came from: a non-empty prompt of
// known token ids that fits the context (with room for one generated token; a prompt only scored or embedded
// may fill it; one to embed has at most `max_embedding_tokens`), two tokens at least to score,
// valid sampling parameters and a variant the model can run (Variant::Validate). Fields are named by
// `names` ("prompt", "temperature", ...: the engine's names by default).
absl::Status ValidateRequest(const EngineRequest& request, const ModelConfig& config, bool has_adapter, int max_embedding_tokens,
                             FieldNames names = EngineFieldName);
// The context rule alone (ValidateRequest applies it to "prompt"): a prompt to score fits the model's context; a
// prompt to generate from leaves room for one generated token. Else INVALID_ARGUMENT naming `field`.
absl::Status CheckPromptFitsContext(size_t prompt_len, RequestKind kind, const ModelConfig& config, absl::string_view field,
                                    FieldNames names = EngineFieldName);

// A prompt's own scores, as FinishInfo carries them (when the request asked for its prompt's log-probs).
struct PromptScores {
  std::vector<float> logprobs;                          // [prompt_len - 1]: log p(prompt[t] | prompt[<t]), t >= 1
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // [prompt_len - 1][k] alternatives (when asked)
};

// Tokens generated in one step (usually one) and the text they add.
struct StreamChunk {
  std::vector<SampledToken> tokens;  // ids, and log-probs when asked for
  std::string text;                  // never splits a UTF-8 character; may be empty (held back)
  // The first chunk of a request that asked for its prompt's log-probs and EngineRequest::prompt_scores_in_first_chunk:
  // the prompt's scores (FinishInfo carries them too). Null on every other chunk.
  std::shared_ptr<const PromptScores> prompt_scores;
};

enum class FinishReason {
  kStop,       // an end-of-sequence token, a stop token or a stop string
  kLength,     // max_tokens, or the model's context
  kCancelled,  // Engine::Cancel or shutdown
  kDeadline,   // the deadline passed
  kError,      // see FinishInfo::status
};
const char* FinishReasonName(FinishReason reason);  // "stop", "length", "cancelled", "deadline", "error"

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_prompt_tokens = 0;  // prompt tokens served from the prefix cache (last admission)
  int preemptions = 0;
  int draft_tokens = 0;           // speculative drafts computed for it (EngineConfig::prediction_draft_tokens)
  int accepted_draft_tokens = 0;  // of which kept in the output
};

struct Timings {
  double queue_seconds = 0;              // arrival -> first scheduled
  double time_to_first_token_seconds = 0;  // arrival -> first generated token
  double time_per_output_token_seconds = 0;  // mean gap between generated tokens after the first
  double total_seconds = 0;              // arrival -> finish
  double prefill_seconds = 0;            // first scheduled -> first generated token (prompt computed, preemptions included)
  double decode_seconds = 0;             // first -> last generated token
};

// A generation kept for a later comparison (EngineRequest::keep_generated).
struct KeptGeneration {
  std::vector<int32_t> sequence;     // prompt, then the generated tokens
  int prompt_len = 0;
  std::vector<float> raw_logprobs;   // [generated]: log p(token) under the raw model distribution
  std::vector<int32_t> argmax;       // [generated]: the most likely token at that step
  std::string cache_salt;            // the request's (a comparison scores it in the same prefix-cache namespace)
  std::string lora;                  // the request's LoRA adapter (a comparison scores it with the same one)
};

struct FinishInfo {
  FinishReason reason = FinishReason::kStop;
  absl::Status status;             // OK unless reason is kError, kDeadline or kCancelled
  std::string text;                // text still held back at the end (emit it after the last chunk)
  std::string stop_string;         // the stop string that ended the text, if any
  // The request's stop_token_ids entry that ended it, if one did (the model's own end-of-sequence tokens are not
  // reported, unless the request listed them).
  std::optional<int32_t> stop_token_id;
  Usage usage;
  Timings timings;
  uint64_t seed = 0;               // the sampling seed used (the request's, or drawn): resubmitting with it reproduces the draws
  int max_tokens = 0;              // max_tokens as the request asked (generation)
  int priority = 0;                // the request's priority
  std::string lora;                // the request's LoRA adapter (empty: the base model)
  std::vector<float> prompt_logprobs;  // [prompt_len - 1]: log p(prompt[t] | prompt[<t]), t >= 1 (when asked)
  std::vector<bool> prompt_is_greedy;  // [prompt_len - 1]: whether prompt[t] was the most likely token (when asked)
  std::vector<int32_t> prompt_argmax;  // [prompt_len - 1]: the most likely token at position t >= 1 (when asked)
  std::vector<int32_t> prompt_ranks;   // [prompt_len - 1]: prompt[t]'s rank in the vocabulary, 1 = most likely (when asked)
  std::vector<std::vector<TokenLogprob>> prompt_top_logprobs;  // [prompt_len - 1][k] alternatives (when asked)
  // Mean raw-model log-prob of the generated tokens (quality signal); set when the engine computes
  // log-probs for every token (EngineConfig::always_compute_logprobs) or the request asked for them.
  std::optional<double> mean_generated_logprob;
  // When the request asked for attention diagnostics and its prompt was computed.
  std::optional<AttentionDiagnostics> attention;
  // When the request set keep_generated.
  std::optional<KeptGeneration> generated;
  // kEmbed: [hidden_size] the final norm's output at the prompt's last position (the row the LM head would read),
  // as the model computed it (not normalized to unit length).
  std::vector<float> embedding;
  // kClassify: [class_token_ids.size()] the model's logits of EngineRequest::class_token_ids at the prompt's last
  // position (raw: before any sampling parameter).
  std::vector<float> class_logits;
};

// Receives a request's results on the engine's step thread. Implementations must not block: queue the
// data and return (a gRPC reactor writes it later).
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void OnChunk(const StreamChunk& chunk) = 0;
  // Called exactly once, last.
  virtual void OnFinish(const FinishInfo& info) = 0;
};

}  // namespace arach
