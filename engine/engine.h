// Engine: accepts requests from any thread and serves them with continuous batching on its own step
// thread: schedule -> one forward over the batch -> sample -> stream results to each request's observer.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/constraint/constraint_compiler.h"
#include "engine/request.h"
#include "engine/bundle/model_bundle.h"
#include "engine/core/field_error.h"
#include "engine/model/lora_adapter.h"
#include "engine/runner/forward_batch.h"
#include "engine/sampling/sampler.h"
#include "engine/sched/scheduler.h"

namespace arach {

// What one step did (for step-level metrics).
struct StepReport {
  int num_sequences = 0;  // sequences in the forward
  int num_tokens = 0;     // verbal rows computed
  double seconds = 0;     // schedule + forward + sampling
};

// The most draft tokens a step checks for one sequence (EngineConfig::prediction_draft_tokens, prompt_lookup_tokens).
inline constexpr int kMaxDraftTokens = 64;

struct EngineConfig {
  int max_num_seqs = 64;             // sequences in the running batch at most
  int max_num_batched_tokens = 512;  // tokens per step (prefill chunks + decodes)
  int max_queued_requests = 1024;    // requests waiting for admission at most; beyond: RESOURCE_EXHAUSTED
  bool enable_prefix_caching = true;
  // Background tokens (shadow scoring) in a step that also computes live tokens, and in any step (SchedulerConfig).
  int background_tokens_beside_live = 0;
  int background_tokens_per_step = 8;
  // A waiting request's priority improves by one per this many seconds of waiting (0: no aging).
  double priority_aging_seconds = 0;
  // Compute each generated token's log-prob even when the request did not ask (for quality metrics).
  bool always_compute_logprobs = false;
  // Where the backend can (CUDA), pick generated tokens on the device, so that a step copies back only their ids
  // (and the logits of requests that want log-probs); false: every sampled row's logits come back and the host's
  // Sampler picks (its draws are the reference; the device's may differ at rounding boundaries).
  bool sample_on_device = true;
  // Speculative decoding (engine/spec): a step computes a few draft tokens after a decoding sequence's last token,
  // and keeps each draft the sampler then picks: several tokens for one step where the drafts are right, the same
  // output either way. Drafts come from the request's prediction (EngineRequest::prediction), at most
  // prediction_draft_tokens a step (0: predictions are not used), else, where prompt_lookup_tokens > 0, from the
  // sequence itself (prompt lookup: the tokens after the latest 2- to 4-token n-gram's earlier occurrence). A request
  // that drafts samples on the host every step (so that its tokens never depend on which steps had drafts).
  int prediction_draft_tokens = 8;
  int prompt_lookup_tokens = 0;
  // No drafts in a step where at least this many sequences are running or waiting (0: any number): where a step's time grows
  // with its rows (a CPU beyond a few sequences), a rejected draft slows every sequence of the step (vLLM's
  // disable_by_batch_size).
  int speculative_disable_by_batch_size = 0;
  // Structured output: how long one constraint may take to compile before the request is refused.
  std::chrono::milliseconds constraint_compile_timeout{10000};
  // Called on the step thread after every step that ran a forward; must be quick and must not block.
  std::function<void(const StepReport&)> step_observer;
  // Health() turns UNAVAILABLE once this many steps in a row failed their forward (a device that keeps failing,
  // e.g. after a sticky CUDA error, which only a restart cures); 0: never.
  int unhealthy_after_failed_steps = 5;
  // ... or while one round of the step thread has been running for longer than this (a wedged device or a
  // deadlock: requests wait forever); zero: never.
  std::chrono::milliseconds stall_timeout{300000};
  // Fault tests: called on the step thread before each forward; an error it returns fails the step as a failed
  // forward would (every request of the batch ends with it).
  std::function<absl::Status()> forward_fault;
};

// A snapshot of the engine's state (for metrics and tests).
struct EngineStats {
  int num_running = 0;              // live requests (background work is counted apart)
  int num_waiting = 0;              // queued and preempted live requests
  int num_background = 0;           // background requests (shadow scoring), running or waiting
  int kv_blocks_total = 0;
  int kv_blocks_used = 0;           // held by sequences
  int kv_blocks_cached = 0;         // registered in the prefix cache
  int64_t prefix_cache_queries = 0; // prompt blocks looked up (full blocks of kv_block_size() tokens)
  int64_t prefix_cache_hits = 0;
  int64_t deferred_admissions = 0;  // admissions put off a step to reuse a prompt block being computed
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t requests_finished = 0;
  int64_t generated_tokens = 0;
  int64_t prompt_tokens_computed = 0;
  int64_t failed_steps = 0;         // steps whose forward failed (their requests ended with the error)
  int64_t draft_tokens = 0;         // speculative drafts computed and verified
  int64_t accepted_draft_tokens = 0;  // of which kept (each one a generated token that took no step of its own)
  // Per registered LoRA adapter (by index; "" for an index free to take, or of an adapter replaced): its name and its
  // requests running, and waiting (queued, preempted or just arrived), background work included.
  std::vector<std::string> lora_adapters;
  // Per index: the adapter name its requests were made for, a replaced adapter's too ("" for an index free to take).
  std::vector<std::string> lora_request_adapters;
  std::vector<int> lora_running;
  std::vector<int> lora_waiting;
  int lora_max_on_device = 0;     // LoraLimits::max_loras: adapters a batch may hold (0: every one registered)
  int lora_on_device = 0;         // adapters on the device now
  int64_t lora_swap_ins = 0;      // adapters put on the device from the host for a request (LoraLimits::swaps)
  int64_t lora_deferred_admissions = 0;  // admissions put off by a step for want of a place for the request's adapter
};

class Engine {
 public:
  // Takes the model and starts the step thread.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(ModelBundle model, const EngineConfig& config);
  ~Engine();  // Shutdown()

  // Validates (ValidateRequest, fields named by `names`) and queues `request`; results go to `observer`.
  // Errors (nothing is queued then): INVALID_ARGUMENT naming the field (empty prompt, unknown token ids,
  // sampling values, a prompt that leaves no room in the context, a request larger than the whole KV
  // pool), FAILED_PRECONDITION (the skip variant without an adapter), RESOURCE_EXHAUSTED (the queue is
  // full), UNAVAILABLE (shut down).
  absl::StatusOr<uint64_t> Submit(EngineRequest request, std::shared_ptr<RequestObserver> observer, FieldNames names = EngineFieldName);
  // Compiles `constraint` for this model as Submit would (the compiled grammar stays cached for the requests that
  // follow): the errors of ConstraintCompiler::Compile, naming `field`. For a caller that builds a larger
  // constraint out of this one and wants a failure named where it lies.
  absl::Status CheckConstraint(const OutputConstraint& constraint, absl::string_view field) const;
  // Ends a request at the next step boundary (its observer gets OnFinish with kCancelled, or kDeadline where its
  // deadline is at most kDeadlineCancelSlack away: a client's own deadline fires when ours does, and its cancel
  // may arrive first); unknown ids are ignored.
  void Cancel(uint64_t id);
  // Stops the step thread; requests still queued or running finish with kCancelled / UNAVAILABLE.
  void Shutdown();

  EngineStats stats() const;
  // OK, or UNAVAILABLE saying why the engine cannot serve and should be restarted: the last
  // EngineConfig::unhealthy_after_failed_steps steps failed (the last error quoted), or a round of the step
  // thread has run longer than EngineConfig::stall_timeout. Thread-safe and quick (liveness probes call it).
  absl::Status Health() const;
  const ModelConfig& model_config() const { return model_.config; }
  const EmbeddingConfig& embedding_config() const { return model_.embedding_config; }
  // The tokens whose logits score a pair where the model serves as a cross-encoder (ModelBundle); empty: it does not.
  const std::vector<int32_t>& classifier_token_ids() const { return model_.classifier_token_ids; }
  // The most tokens an input to embed may have: the model's context, or less where its sentence_bert_config.json
  // says so (EmbeddingConfig::max_tokens).
  int max_embedding_tokens() const {
    return std::min(model_.config.max_positions, model_.embedding_config.max_tokens.value_or(model_.config.max_positions));
  }
  const Tokenizer& tokenizer() const { return *model_.tokenizer; }
  // The model's chat template (or --chat_template's); null when it has none.
  const ChatTemplate* chat_template() const { return model_.chat_template.get(); }
  bool has_adapter() const { return model_.runner->has_adapter(); }
  // The LoRA adapters a request may name (EngineRequest::lora), in index order. Thread-safe.
  std::vector<std::string> lora_names() const;
  // Loads the PEFT adapter folder `path` (LoadLoraAdapter) under `name` while the engine serves, and returns once
  // requests may name it; it takes the index of one unloaded before, if any. It goes onto the device now where
  // fewer than LoraLimits::max_loras are there, else (adapters swap: LoraLimits::swaps) when a request needs it.
  // INVALID_ARGUMENT for a name already loaded or an adapter the model cannot take (naming the file and field or
  // tensor) or above the bundle's rank limit; RESOURCE_EXHAUSTED where LoraLimits::max_registered adapters are
  // registered; the device's error where its memory cannot hold it; UNAVAILABLE when shut down.
  // `replace` (vLLM's load_inplace), where `name` is loaded: the new weights take the name. Requests submitted once
  // this returns run with them; those queued or running keep the old weights, which stay registered until the last
  // of them finishes (counting toward the bound; where that leaves no room for the new weights and no request
  // holds the old ones, the old adapter is unloaded first).
  absl::Status LoadLora(const std::string& name, const std::string& path, bool replace = false);
  // Unloads adapter `name` and frees its memory. NOT_FOUND when none is loaded under it; FAILED_PRECONDITION while
  // requests that named it are queued or running (nothing changes then: retry once they finish).
  absl::Status UnloadLora(const std::string& name);
  int adapter_expansion() const { return model_.runner->adapter_expansion(); }
  int kv_block_size() const { return model_.runner->kv_cache().block_size(); }
  // The KV cache's element type and what one cached token takes (K and V, all layers).
  DType kv_cache_dtype() const { return model_.runner->kv_cache().dtype(); }
  size_t kv_bytes_per_token() const { return model_.runner->kv_cache().bytes_per_token(); }
  std::string device() const { return model_.runner->backend().Describe(); }
  const std::string& kv_memory_note() const { return model_.runner->kv_memory_note(); }
  const EngineConfig& config() const { return config_; }
  // The most tokens a request with a prompt of `prompt_len` tokens could generate: the rest of the model's
  // context and, but for sliding-window models (whose sequences hold a bounded number of blocks), of the whole KV
  // pool. 0 when the prompt alone fills them.
  int MaxNewTokens(int prompt_len) const;

 private:
  struct RequestState;
  Engine(ModelBundle model, const EngineConfig& config);
  void Loop();
  // SequenceInput::lora of the adapter `name` names (its index + 1; 0 for none); INVALID_ARGUMENT naming the field
  // "lora" for an adapter not loaded. Called with mutex_ held.
  absl::StatusOr<int> LoraIndexLocked(const std::string& name, FieldNames names) const;
  // Before a step's forward: puts the adapters of the running sequences (at most max_loras: the scheduler sees to
  // it) onto the device, each in place of the one least recently used that no running sequence needs. Step thread.
  absl::Status PutRunningLorasOnDevice();
  // Runs the LoRA loads and unloads asked for since the last round (the step thread's, between steps; `lock`
  // holds mutex_ on entry and on return).
  void RunLoraOps(std::unique_lock<std::mutex>& lock);
  // A load (with its adapter, read from disk by the caller) or an unload (without), answered through `done`.
  struct LoraOp {
    std::string name;
    std::optional<LoraAdapter> adapter;  // a load; none: an unload
    bool replace = false;                // a load that may replace the adapter of that name (LoadLora)
    std::promise<absl::Status> done;
  };
  // Requests queued or running of LoRA adapter `index` (SequenceInput::lora = index + 1). Step thread, mutex_ held.
  int LoraUsersLocked(size_t index) const;
  // The registered adapters the runner holds now. Step thread.
  int LorasOnDevice() const;
  // Empties LoRA index `index`: off the device, off the host, nameless. Step thread, mutex_ held.
  void DropLoraLocked(size_t index);
  // Drops replaced adapters whose last request finished. Step thread, between steps, mutex_ held.
  void FreeReplacedLorasLocked();
  // Queues `op` for the step thread and waits for its answer.
  absl::Status RunLoraOp(std::unique_ptr<LoraOp> op);
  // Answers every op of `ops` UNAVAILABLE (the engine shut down) and empties it.
  static void FailLoraOps(std::vector<std::unique_ptr<LoraOp>>& ops);
  // One schedule -> forward -> sample round.
  void Step();
  void TakeInbox(std::unique_lock<std::mutex>& lock);
  // Hands newly submitted requests to the scheduler (step thread).
  void Adopt(std::vector<std::unique_ptr<RequestState>>& arrived);
  void ExpireDeadlines();
  void Finish(RequestState& request, FinishReason reason, absl::Status status = absl::OkStatus());
  // The sampler's input for `request`'s next token (its logits left empty): parameters, context, seed, stop tokens
  // and the structured-output mask.
  absl::StatusOr<SamplerInput> SamplerInputFor(RequestState& request);
  // Whether the step must copy `request`'s logits back even where its token is picked on the device (the top
  // log-probs, the kept generation of shadow scoring).
  bool NeedsHostLogits(const RequestState& request) const;
  // What the device picked for a request (token < 0: nothing, the host samples from the logits).
  struct DevicePick {
    int32_t token = -1;
    float logprob = 0.0f;  // under the model's distribution
  };
  // Picks the next token (the device's pick, or from `logits` on the host), emits it and ends the request where
  // it stops. `draft` (>= 0): the speculative draft at this position, counted as kept where the token equals it.
  void SampleAndEmit(RequestState& request, std::span<const float> logits, DevicePick device, int32_t draft = -1);
  // Speculative decoding (engine_drafts.cc). Whether `request` drafts tokens.
  bool Speculates(const RequestState& request) const;
  // Before a step: drops drafts a previous step left unscheduled, and appends new ones to each running generation
  // that decodes (its prompt computed, one token sampled and not yet computed).
  void ProposeDrafts();
  // After the step's forward, for a sequence whose chunk ended in drafts (sequence `index` of `out`, every row
  // returned): samples its rows in order as SampleAndEmit does, keeping each draft that equals the token sampled
  // at its position; the first token that differs, or the token after the last draft, ends the step's tokens.
  void VerifyDrafts(RequestState& request, const ForwardOutput& out, int index);
  void PublishStats();

  ModelBundle model_;
  EngineConfig config_;
  // A registered LoRA adapter, by index (SequenceInput::lora = index + 1, the runner's index too).
  struct LoraEntry {
    std::string name;       // "" at an index free to take, or of an adapter replaced
    bool replaced = false;  // a replacement took its name: its requests finish on it, then FreeReplacedLorasLocked drops it
    std::string former_name;  // a replaced adapter's name: the requests still finishing on it were made for that name
    // The number of the load that registered it (1, 2, ... over the engine's life), which keys its cached blocks:
    // an adapter at a reused index never finds its predecessor's.
    uint64_t load = 0;
    std::shared_ptr<const LoraAdapter> host;  // its weights on the host where adapters swap (LoraLimits::swaps)
    bool on_device = false;  // the runner holds it
    int64_t last_used = 0;   // the last round a running request needed it (the least recent goes first)
    bool taken() const { return !name.empty() || replaced; }
  };
  // Written by the step thread with mutex_ held, read by others with it held; on_device and last_used are the step
  // thread's alone.
  std::vector<LoraEntry> loras_;
  uint64_t lora_load_count_ = 0;  // guarded by mutex_
  int64_t lora_round_ = 0;        // step thread: rounds that ran LoRA requests (LoraEntry::last_used)
  int64_t lora_swap_ins_ = 0;     // step thread (published in EngineStats)
  std::vector<std::unique_ptr<LoraOp>> lora_ops_;  // guarded by mutex_: loads and unloads for the step thread
  BlockAllocator allocator_;
  Scheduler scheduler_;
  std::unordered_map<uint64_t, std::unique_ptr<RequestState>> requests_;  // step thread only
  Sampler sampler_;                                                        // step thread only
  ForwardOutput step_output_;  // step thread only: the last step's logits, its buffers reused by the next step
  std::unique_ptr<ConstraintCompiler> constraints_;  // structured output, for the model's tokenizer (thread-safe)

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  std::vector<std::unique_ptr<RequestState>> inbox_;
  std::vector<uint64_t> cancels_;
  bool stopping_ = false;
  int queued_ = 0;  // submitted, not yet admitted to the running batch
  uint64_t next_id_ = 1;
  std::mt19937_64 seeder_;  // seeds of requests that give none
  EngineStats stats_;
  int consecutive_failed_steps_ = 0;
  std::string last_step_error_;                  // of the last failed step
  std::optional<Clock::time_point> round_start_;  // while the step thread runs a round (Health's stall check)
  std::thread thread_;
};

}  // namespace arach
