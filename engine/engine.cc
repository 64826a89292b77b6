#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/status.h"
#include "engine/engine_request_state.h"
#include "engine/output/detokenizer.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/token_filter.h"

namespace arach {
namespace {

// A cancel that arrives this close to the request's deadline is the deadline's (Engine::Cancel).
constexpr auto kDeadlineCancelSlack = std::chrono::milliseconds(50);

}  // namespace

Engine::Engine(ModelBundle model, const EngineConfig& config)
    : model_(std::move(model)),
      config_(config),
      allocator_(model_.runner->kv_cache().num_blocks()),
      scheduler_(SchedulerConfig{config.max_num_seqs, config.max_num_batched_tokens, config.enable_prefix_caching,
                                 model_.config.UniformSlidingWindow(), config.background_tokens_beside_live,
                                 config.background_tokens_per_step, config.priority_aging_seconds,
                                 model_.lora_limits.swaps() ? model_.lora_limits.max_loras : 0},
                 allocator_),
      constraints_(std::make_unique<ConstraintCompiler>(*model_.tokenizer, model_.config.vocab_size, model_.config.eos_token_ids,
                                                        ConstraintCompiler::Options{config.constraint_compile_timeout})),
      seeder_(std::random_device{}()) {
  for (ModelBundle::StartupLora& startup : model_.startup_loras) {  // --lora_modules: the runner holds the first max_loras
    LoraEntry& entry = loras_.emplace_back();
    entry.name = startup.name;
    entry.load = ++lora_load_count_;
    entry.host = std::move(startup.host);
    entry.on_device = !model_.lora_limits.swaps() || static_cast<int>(loras_.size()) <= model_.lora_limits.max_loras;
  }
  model_.startup_loras.clear();
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(ModelBundle model, const EngineConfig& config) {
  if (config.max_num_seqs < 1 || config.max_num_batched_tokens < 1 || config.max_queued_requests < 0 ||
      config.background_tokens_beside_live < 0 || config.background_tokens_per_step < 1 || !(config.priority_aging_seconds >= 0)) {
    return absl::InvalidArgumentError("engine: max_num_seqs, max_num_batched_tokens and background_tokens_per_step must be "
                                      ">= 1, max_queued_requests, background_tokens_beside_live and priority_aging_seconds >= 0");
  }
  if (config.prediction_draft_tokens < 0 || config.prediction_draft_tokens > kMaxDraftTokens || config.prompt_lookup_tokens < 0 ||
      config.prompt_lookup_tokens > kMaxDraftTokens || config.speculative_disable_by_batch_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("engine: prediction_draft_tokens and prompt_lookup_tokens must be in [0, ",
                                                   kMaxDraftTokens, "], speculative_disable_by_batch_size >= 0"));
  }
  if (config.unhealthy_after_failed_steps < 0 || config.stall_timeout.count() < 0) {
    return absl::InvalidArgumentError("engine: unhealthy_after_failed_steps and stall_timeout must be >= 0 (0: never)");
  }
  if (model.runner == nullptr || model.tokenizer == nullptr) return absl::InvalidArgumentError("engine: the model is not loaded");
  std::unique_ptr<Engine> engine(new Engine(std::move(model), config));
  engine->PublishStats();
  engine->thread_ = std::thread([e = engine.get()] { e->Loop(); });
  return engine;
}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int Engine::MaxNewTokens(int prompt_len) const {
  const int64_t context_left = model_.config.max_positions - prompt_len;
  if (model_.config.UniformSlidingWindow() > 0) return static_cast<int>(std::max<int64_t>(0, context_left));
  const int64_t pool_left = static_cast<int64_t>(allocator_.num_blocks()) * kv_block_size() - prompt_len;
  return static_cast<int>(std::max<int64_t>(0, std::min(context_left, pool_left)));
}

absl::Status Engine::CheckConstraint(const OutputConstraint& constraint, absl::string_view field) const {
  return constraints_->Compile(constraint, field).status();
}

absl::StatusOr<uint64_t> Engine::Submit(EngineRequest request, std::shared_ptr<RequestObserver> observer, FieldNames names) {
  const ModelConfig& c = model_.config;
  ARACH_RETURN_IF_ERROR(ValidateRequest(request, c, has_adapter(), max_embedding_tokens(), names));
  {  // refused before any work; resolved again where the request is queued (an unload may come between)
    std::lock_guard<std::mutex> lock(mutex_);
    ARACH_RETURN_IF_ERROR(LoraIndexLocked(request.lora, names).status());
  }
  const SamplingParams& sp = request.sampling;
  const int prompt_len = static_cast<int>(request.prompt.size());
  const int new_tokens = request.kind == RequestKind::kGenerate ? sp.max_tokens : 0;
  const int max_len = std::min(prompt_len + new_tokens, c.max_positions);
  const int block_size = model_.runner->kv_cache().block_size();
  int blocks_needed = (max_len + block_size - 1) / block_size;
  if (const int window = model_.config.UniformSlidingWindow(); window > 0) {
    // A windowed sequence holds the blocks of its window and of the chunk being computed, at most.
    blocks_needed = std::min(blocks_needed, (window + config_.max_num_batched_tokens) / block_size + 2);
  }
  if (blocks_needed > allocator_.num_blocks()) {
    return InvalidField(names, "max_tokens", absl::StrCat("prompt (", prompt_len, ") + max_tokens (", new_tokens, ") needs ",
                                                          blocks_needed, " KV blocks but the whole pool holds ",
                                                          allocator_.num_blocks(), "; it could never run"));
  }

  TokenFilter token_filter;
  if (request.kind == RequestKind::kGenerate) {
    ARACH_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> bad_word_ids,
                           BadWordTokenIds(sp.bad_words, *model_.tokenizer, c.vocab_size, names));
    ARACH_ASSIGN_OR_RETURN(token_filter, TokenFilter::Create(sp, std::move(bad_word_ids), c.vocab_size, names));
  }

  std::shared_ptr<const CompiledConstraint> compiled;
  if (request.constraint.active()) {
    if (request.kind != RequestKind::kGenerate) {
      return InvalidField(names, "constraint", "a score or embedding request generates nothing to constrain");
    }
    ARACH_ASSIGN_OR_RETURN(compiled, constraints_->Compile(request.constraint, names("constraint")));
  }

  auto state = std::make_unique<RequestState>(0, std::move(request), std::move(observer), *model_.tokenizer, block_size);
  state->max_len = max_len;
  state->arrival = Clock::now();
  Sequence& seq = state->seq;
  seq.tokens = state->request.prompt;
  seq.prompt_len = prompt_len;
  seq.variant = state->request.variant;
  state->token_filter = std::move(token_filter);
  seq.want_prompt_logprobs = state->request.wants_prompt_logprobs();
  if (state->request.kind == RequestKind::kEmbed) {
    state->embedding_pooler.emplace(model_.embedding_config.pooling, model_.config.hidden_size);
    seq.want_every_prompt_row = state->embedding_pooler->ReadsEarlierRows();
  }
  if (seq.want_prompt_logprobs) {
    state->prompt_logprobs.assign(std::max(0, prompt_len - 1), 0.0f);
    state->prompt_is_greedy.assign(std::max(0, prompt_len - 1), false);
    state->prompt_argmax.assign(std::max(0, prompt_len - 1), 0);
    state->prompt_ranks.assign(std::max(0, prompt_len - 1), 0);
    if (state->request.prompt_top_logprobs > 0) state->prompt_top_logprobs.assign(std::max(0, prompt_len - 1), {});
  }
  seq.background = state->request.request_class == RequestClass::kBackground;
  seq.priority = state->request.priority;
  seq.arrival = state->arrival;
  if (state->request.keep_generated) {
    state->generated.emplace();
    state->generated->cache_salt = state->request.cache_salt;
    state->generated->lora = state->request.lora;
  }
  if (state->request.attention_diagnostics) {
    seq.want_attention_diagnostics = true;
    state->diagnostics.emplace(c.num_layers, c.num_heads);
  }
  if (!state->request.sampling.ignore_eos) state->stop_ids = c.eos_token_ids;
  for (int32_t t : state->request.sampling.stop_token_ids) state->stop_ids.push_back(t);
  if (compiled != nullptr) {
    ARACH_ASSIGN_OR_RETURN(ConstraintMatcher matcher, ConstraintMatcher::Create(std::move(compiled), state->stop_ids));
    // The first mask, computed now (the first sample reuses it) so that a constraint no text can satisfy is
    // refused here rather than ending the stream in an error.
    if (absl::Status first = matcher.AllowedTokens().status(); !first.ok()) {
      return InvalidField(names, "constraint", first.message());
    }
    state->constraint.emplace(std::move(matcher));
  }

  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return absl::UnavailableError("the engine is shutting down");
    if (!seq.background && queued_ >= config_.max_queued_requests) {
      return absl::ResourceExhaustedError(absl::StrCat("the request queue is full (", config_.max_queued_requests,
                                                       " waiting); retry later"));
    }
    ARACH_ASSIGN_OR_RETURN(seq.lora, LoraIndexLocked(state->request.lora, names));
    // The adapter's load keys its blocks: an adapter loaded again under the same name, or at the index of one
    // unloaded, is another model.
    seq.cache_namespace = CacheNamespaceOf(
        state->request.cache_salt, seq.lora > 0 ? absl::StrCat("lora-load:", loras_[static_cast<size_t>(seq.lora - 1)].load) : "");
    id = next_id_++;
    state->seed = state->request.sampling.seed ? *state->request.sampling.seed : seeder_();
    state->id = id;
    seq.id = id;
    state->queued = !seq.background;  // background work is bounded by its submitter
    if (state->queued) ++queued_;
    inbox_.push_back(std::move(state));
  }
  wake_.notify_one();
  return id;
}

void Engine::Cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

absl::Status Engine::Health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int failed = consecutive_failed_steps_;
  if (config_.unhealthy_after_failed_steps > 0 && failed >= config_.unhealthy_after_failed_steps) {
    return absl::UnavailableError(absl::StrCat("the engine's last ", failed, " steps failed: ", last_step_error_));
  }
  if (config_.stall_timeout.count() > 0 && round_start_.has_value()) {
    const auto running = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *round_start_);
    if (running > config_.stall_timeout) {
      return absl::UnavailableError(absl::StrCat("the engine's step thread has been in one step for ", running.count(),
                                                 " ms (stall timeout ", config_.stall_timeout.count(), " ms)"));
    }
  }
  return absl::OkStatus();
}

void Engine::PublishStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto& running = scheduler_.running();
  const int background_running = static_cast<int>(std::count_if(running.begin(), running.end(), [](const Sequence* s) { return s->background; }));
  int background_arrived = 0;
  for (const auto& state : inbox_) background_arrived += state->seq.background ? 1 : 0;
  stats_.num_running = static_cast<int>(running.size()) - background_running;
  stats_.num_waiting = static_cast<int>(scheduler_.waiting().size() + inbox_.size()) - background_arrived;
  stats_.num_background = background_running + static_cast<int>(scheduler_.background_waiting().size()) + background_arrived;
  stats_.kv_blocks_total = allocator_.num_blocks();
  stats_.kv_blocks_used = allocator_.num_used();
  stats_.kv_blocks_cached = allocator_.num_cached();
  stats_.prefix_cache_queries = scheduler_.prefix_cache_queries();
  stats_.prefix_cache_hits = scheduler_.prefix_cache_hits();
  stats_.deferred_admissions = scheduler_.deferred_admissions();
  stats_.preemptions = scheduler_.num_preemptions();
  stats_.lora_adapters.clear();
  stats_.lora_request_adapters.clear();
  for (const LoraEntry& entry : loras_) {
    stats_.lora_adapters.push_back(entry.name);
    stats_.lora_request_adapters.push_back(entry.replaced ? entry.former_name : entry.name);
  }
  stats_.lora_on_device = LorasOnDevice();
  stats_.lora_max_on_device = model_.lora_limits.max_loras;
  stats_.lora_swap_ins = lora_swap_ins_;
  stats_.lora_deferred_admissions = scheduler_.lora_deferred_admissions();
  stats_.lora_running.assign(loras_.size(), 0);
  stats_.lora_waiting.assign(loras_.size(), 0);
  if (!loras_.empty()) {
    const auto count = [](std::vector<int>& counts, const Sequence& seq) {
      if (seq.lora > 0) ++counts[static_cast<size_t>(seq.lora - 1)];
    };
    for (const Sequence* seq : running) count(stats_.lora_running, *seq);
    for (const Sequence* seq : scheduler_.waiting()) count(stats_.lora_waiting, *seq);
    for (const Sequence* seq : scheduler_.background_waiting()) count(stats_.lora_waiting, *seq);
    for (const auto& state : inbox_) count(stats_.lora_waiting, state->seq);
  }
}

void Engine::Adopt(std::vector<std::unique_ptr<RequestState>>& arrived) {
  for (auto& state : arrived) {
    scheduler_.Add(&state->seq);
    const uint64_t id = state->id;
    requests_.emplace(id, std::move(state));
  }
}

void Engine::TakeInbox(std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<RequestState>> arrived;
  arrived.swap(inbox_);
  std::vector<uint64_t> cancels;
  cancels.swap(cancels_);
  lock.unlock();
  Adopt(arrived);
  // gRPC cancels a call whose deadline passed before the step's own check sees it, and a client's deadline fires
  // when ours does (its cancel may come first): that is a deadline, not the client going away (the finish reason
  // in metrics and the request log tells the two apart).
  if (!cancels.empty()) ExpireDeadlines();
  for (uint64_t id : cancels) {
    const auto it = requests_.find(id);
    if (it == requests_.end() || it->second->finished) continue;
    const std::optional<Clock::time_point>& deadline = it->second->request.deadline;
    if (deadline && *deadline <= Clock::now() + kDeadlineCancelSlack) {
      Finish(*it->second, FinishReason::kDeadline, absl::DeadlineExceededError("the request's deadline passed"));
    } else {
      Finish(*it->second, FinishReason::kCancelled, absl::CancelledError("cancelled by the client"));
    }
  }
  lock.lock();
}

void Engine::ExpireDeadlines() {
  const Clock::time_point now = Clock::now();
  for (auto& [id, state] : requests_) {
    if (!state->finished && state->request.deadline && *state->request.deadline <= now) {
      Finish(*state, FinishReason::kDeadline, absl::DeadlineExceededError("the request's deadline passed"));
    }
  }
}

void Engine::Finish(RequestState& r, FinishReason reason, absl::Status status) {
  if (r.finished) return;
  r.finished = true;
  r.seq.DropDrafts();  // a step's drafts not yet verified (a failed forward, a cancel) are not output
  scheduler_.Remove(&r.seq);
  const Clock::time_point now = Clock::now();
  FinishInfo info;
  info.reason = reason;
  info.status = std::move(status);
  info.text = r.detokenizer.Flush();
  info.stop_string = r.detokenizer.matched_stop();
  info.stop_token_id = r.stop_token_id;
  info.usage.prompt_tokens = r.seq.prompt_len;
  info.usage.completion_tokens = std::max(0, r.seq.num_generated());
  info.usage.cached_prompt_tokens = r.seq.num_cached_prompt_tokens;
  info.usage.preemptions = r.seq.num_preemptions;
  info.usage.draft_tokens = r.draft_tokens;
  info.usage.accepted_draft_tokens = r.accepted_draft_tokens;
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  info.timings.total_seconds = seconds(now - r.arrival);
  if (r.started) info.timings.queue_seconds = seconds(r.first_scheduled - r.arrival);
  info.seed = r.seed;
  info.max_tokens = r.request.kind == RequestKind::kGenerate ? r.request.sampling.max_tokens : 0;
  info.priority = r.request.priority;
  info.lora = r.request.lora;
  if (info.usage.completion_tokens > 0) {
    info.timings.time_to_first_token_seconds = seconds(r.first_token - r.arrival);
    info.timings.prefill_seconds = seconds(r.first_token - r.first_scheduled);
    info.timings.decode_seconds = seconds(r.last_token - r.first_token);
    if (info.usage.completion_tokens > 1) {
      info.timings.time_per_output_token_seconds = seconds(r.last_token - r.first_token) / (info.usage.completion_tokens - 1);
    }
  }
  info.prompt_logprobs = std::move(r.prompt_logprobs);
  info.prompt_is_greedy = std::move(r.prompt_is_greedy);
  info.prompt_argmax = std::move(r.prompt_argmax);
  info.prompt_ranks = std::move(r.prompt_ranks);
  info.embedding = std::move(r.embedding);
  info.class_logits = std::move(r.class_logits);
  if (r.generated) {
    r.generated->sequence = r.seq.tokens;
    r.generated->prompt_len = r.seq.prompt_len;
    info.generated = std::move(r.generated);
  }
  info.prompt_top_logprobs = std::move(r.prompt_top_logprobs);
  if (r.generated_logprobs > 0) info.mean_generated_logprob = r.generated_logprob_sum / r.generated_logprobs;
  if (r.diagnostics && r.diagnostics->rows() == r.seq.prompt_len) {
    info.attention = r.diagnostics->Means(r.seq.variant.arach);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (r.queued) --queued_;
    r.queued = false;
    ++stats_.requests_finished;
  }
  r.observer->OnFinish(info);
}

absl::StatusOr<SamplerInput> Engine::SamplerInputFor(RequestState& r) {
  SamplerInput in;
  in.params = &r.request.sampling;
  in.context = r.seq.tokens;
  in.num_generated = r.seq.num_generated();
  in.seed = r.seed;
  in.suppressed = r.stop_ids;
  in.wants_logprob = config_.always_compute_logprobs;
  if (r.constraint) {
    absl::StatusOr<std::span<const uint32_t>> allowed = r.constraint->AllowedTokens();
    if (absl::IsInvalidArgument(allowed.status())) {
      return absl::InvalidArgumentError(absl::StrCat("the structured output ", allowed.status().message()));
    }
    ARACH_ASSIGN_OR_RETURN(in.allowed, std::move(allowed));
  }
  if (r.token_filter.active()) {  // within the structured output's mask
    const std::span<const int32_t> generated = std::span<const int32_t>(r.seq.tokens).subspan(static_cast<size_t>(r.seq.prompt_len));
    ARACH_ASSIGN_OR_RETURN(in.allowed, r.token_filter.Allowed(in.allowed, generated));
  }
  return in;
}

bool Engine::NeedsHostLogits(const RequestState& r) const {
  return r.request.sampling.top_logprobs > 0 || r.generated.has_value();
}

void Engine::SampleAndEmit(RequestState& r, std::span<const float> logits, DevicePick device, int32_t draft) {
  Sequence& seq = r.seq;
  const SamplingParams& sp = r.request.sampling;
  SampledToken sampled;
  if (device.token >= 0) {
    sampled.token = device.token;
    sampled.logprob = device.logprob;
    if (sp.top_logprobs > 0) sampled.top = RawLogprobs(logits, device.token, sp.top_logprobs).top;
  } else {
    absl::StatusOr<SamplerInput> in = SamplerInputFor(r);
    if (!in.ok()) {
      Finish(r, FinishReason::kError, in.status());
      return;
    }
    in->logits = logits;
    sampled = sampler_.Sample(*in);
  }
  if (r.constraint && !r.constraint->Accept(sampled.token)) {
    Finish(r, FinishReason::kError, absl::InternalError(absl::StrCat("the structured-output constraint refused token ", sampled.token,
                                                                     " that its own mask allowed")));
    return;
  }
  const bool kept_draft = draft >= 0 && sampled.token == draft;
  if (kept_draft) ++r.accepted_draft_tokens;  // counted before a finish below reports them
  if (config_.always_compute_logprobs || sp.logprobs || sp.top_logprobs > 0) {
    r.generated_logprob_sum += sampled.logprob;
    ++r.generated_logprobs;
  }
  if (r.generated) {
    const RowScore score = ScoreRow(logits, sampled.token);  // one read of the row for both
    r.generated->raw_logprobs.push_back(score.logprob);
    r.generated->argmax.push_back(score.argmax);
  }
  seq.tokens.push_back(sampled.token);
  const Clock::time_point now = Clock::now();
  if (seq.num_generated() == 1) r.first_token = now;
  r.last_token = now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.generated_tokens;
    if (kept_draft) ++stats_.accepted_draft_tokens;
  }
  // A constraint that accepted a stop token, or allows nothing but one now, has a complete output: it stops.
  const bool stop_token = std::find(r.stop_ids.begin(), r.stop_ids.end(), sampled.token) != r.stop_ids.end() ||
                          (r.constraint && r.constraint->Terminated());
  const bool constraint_complete = r.constraint && !stop_token && r.constraint->OnlyStopAllowed();
  StreamChunk chunk;
  chunk.tokens.push_back(sampled);
  if (seq.num_generated() == 1 && seq.want_prompt_logprobs && r.request.prompt_scores_in_first_chunk) {  // scored whole by now
    chunk.prompt_scores = std::make_shared<const PromptScores>(PromptScores{r.prompt_logprobs, r.prompt_top_logprobs});
  }
  if (!stop_token) {  // a stop token ends the text; it is not part of it
    auto text = r.detokenizer.Add(sampled.token);
    if (!text.ok()) {
      Finish(r, FinishReason::kError, text.status());
      return;
    }
    chunk.text = std::move(*text);
  }
  r.observer->OnChunk(chunk);
  const std::vector<int32_t>& asked_stops = sp.stop_token_ids;
  if (stop_token && std::find(asked_stops.begin(), asked_stops.end(), sampled.token) != asked_stops.end()) {
    r.stop_token_id = sampled.token;
  }
  if (stop_token || constraint_complete || r.detokenizer.stopped()) {
    Finish(r, FinishReason::kStop);
  } else if (seq.num_generated() >= sp.max_tokens || static_cast<int>(seq.tokens.size()) >= r.max_len) {
    Finish(r, FinishReason::kLength);
  }
}

void Engine::Step() {
  const Clock::time_point step_start = Clock::now();
  ProposeDrafts();
  const ScheduledBatch batch = scheduler_.Schedule();
  if (batch.empty()) return;
  // A step that fails ends its requests with the error (the engine goes on with the next).
  const auto fail_step = [&](const absl::Status& error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.failed_steps;
      ++consecutive_failed_steps_;
      last_step_error_ = error.ToString();
    }
    for (const ScheduledChunk& chunk : batch.chunks) Finish(*requests_.at(chunk.seq->id), FinishReason::kError, error);
  };
  const Clock::time_point now = step_start;
  for (Sequence* seq : batch.admitted) {
    RequestState& r = *requests_.at(seq->id);
    if (!r.started) {
      r.started = true;
      r.first_scheduled = now;
    }
    if (r.queued) {
      std::lock_guard<std::mutex> lock(mutex_);
      --queued_;
      r.queued = false;
    }
  }
  for (Sequence* seq : batch.preempted) {  // a prompt cut short is computed again from its first token
    RequestState& r = *requests_.at(seq->id);
    if (r.diagnostics && r.diagnostics->rows() < seq->prompt_len) r.diagnostics->Reset();
  }
  ForwardBatch forward;
  const bool device_sampling = config_.sample_on_device && model_.runner->samples_on_device();
  std::vector<SamplerInput> device_inputs;  // read by Execute through SequenceInput::sample: no reallocation
  device_inputs.reserve(batch.chunks.size());
  std::vector<std::vector<int32_t>> score_targets(batch.chunks.size());  // read through SequenceInput::score_targets
  for (const ScheduledChunk& chunk : batch.chunks) {
    const Sequence& seq = *chunk.seq;
    SequenceInput input;
    input.tokens = std::span<const int32_t>(seq.tokens).subspan(chunk.start, chunk.num_tokens);
    input.start_position = chunk.start;
    input.block_table = &seq.blocks;
    input.variant = seq.variant;
    input.lora = seq.lora;
    const RequestState& r = *requests_.at(seq.id);
    const bool generates = r.request.kind == RequestKind::kGenerate;
    const bool classifies = r.request.kind == RequestKind::kClassify;
    input.logits = chunk.completes && (generates || classifies) ? LogitsMode::kLast : LogitsMode::kNone;
    if (seq.num_draft > 0) input.logits = LogitsMode::kAll;  // the chunk is the last token and its drafts: each row verifies one
    if (r.embedding_pooler) input.return_hidden = r.embedding_pooler->RowsOf(chunk.start, chunk.completes);
    if (seq.want_prompt_logprobs && chunk.start < seq.prompt_len) {
      // Each row scored on the device against the prompt token that follows it: the rows stay there.
      std::vector<int32_t>& targets = score_targets[forward.sequences.size()];
      for (int position = chunk.start; position < chunk.start + chunk.num_tokens; ++position) {
        targets.push_back(position + 1 < seq.prompt_len ? seq.tokens[position + 1] : -1);
      }
      input.score_targets = targets;
      input.score_top_n = r.request.prompt_top_logprobs;
    }
    // Until the prompt has been counted once; a chunk of an uncounted prompt never holds generated tokens.
    input.attention_diagnostics = r.diagnostics && r.diagnostics->rows() < seq.prompt_len;
    if (device_sampling && chunk.completes && generates && !Speculates(r)) {
      // A request whose input cannot be built samples on the host path, which reports why.
      if (absl::StatusOr<SamplerInput> sample = SamplerInputFor(*requests_.at(seq.id)); sample.ok()) {
        device_inputs.push_back(*sample);
        input.sample = &device_inputs.back();
        if (input.logits == LogitsMode::kLast && !NeedsHostLogits(r)) input.logits = LogitsMode::kNone;
      }
    }
    forward.sequences.push_back(input);
  }
  if (absl::Status loras = PutRunningLorasOnDevice(); !loras.ok()) {
    fail_step(loras);
    return;
  }
  absl::Status fault = config_.forward_fault ? config_.forward_fault() : absl::OkStatus();
  const absl::Status executed = fault.ok() ? model_.runner->Execute(forward, step_output_) : fault;
  if (!executed.ok()) {
    fail_step(executed);
    return;
  }
  scheduler_.CompleteStep(batch);
  const ForwardOutput& out = step_output_;
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < batch.chunks.size(); ++i) {
    const ScheduledChunk& chunk = batch.chunks[i];
    RequestState& r = *requests_.at(chunk.seq->id);
    const int rows = out.num_rows(static_cast<int>(i));
    prompt_tokens += std::max(0, std::min(chunk.start + chunk.num_tokens, r.seq.prompt_len) - chunk.start);
    if (forward.sequences[i].attention_diagnostics) r.diagnostics->Add(out.attention_diagnostics, static_cast<int>(i), chunk.num_tokens);
    if (!forward.sequences[i].score_targets.empty()) {
      const std::span<const RowScore> scores = out.ScoresOf(static_cast<int>(i));
      const int top_n = forward.sequences[i].score_top_n;
      for (int row = 0; row < chunk.num_tokens; ++row) {
        const int position = chunk.start + row;
        if (position + 1 >= r.seq.prompt_len) continue;
        r.RecordPromptScore(position, scores[row]);
        if (top_n > 0) {
          const std::span<const TokenLogprob> top = out.TopOf(static_cast<int>(i), row, top_n);
          r.prompt_top_logprobs[position].assign(top.begin(), top.end());
        }
      }
    }
    if (r.embedding_pooler && forward.sequences[i].return_hidden != HiddenRows::kNone) {
      r.embedding_pooler->Add(chunk.start, out.HiddenOf(static_cast<int>(i)));
    }
    if (!chunk.completes) continue;
    if (r.request.kind == RequestKind::kScore) {  // the prompt is all there is
      Finish(r, FinishReason::kLength);
      continue;
    }
    if (r.embedding_pooler) {
      r.embedding = r.embedding_pooler->Result(r.seq.prompt_len);
      Finish(r, FinishReason::kLength);
      continue;
    }
    if (r.request.kind == RequestKind::kClassify) {  // the last row's logits: one per class token
      if (rows == 0) {
        Finish(r, FinishReason::kError, absl::InternalError("the step returned no logits to classify"));
        continue;
      }
      const std::span<const float> logits = out.Row(static_cast<int>(i), rows - 1);
      for (const int32_t token : r.request.class_token_ids) r.class_logits.push_back(logits[static_cast<size_t>(token)]);
      Finish(r, FinishReason::kLength);
      continue;
    }
    if (r.seq.num_draft > 0) {
      VerifyDrafts(r, out, static_cast<int>(i));
      continue;
    }
    DevicePick device;
    if (!out.sampled_tokens.empty()) device = DevicePick{out.sampled_tokens[i], out.sampled_logprobs[i]};
    if (rows == 0 && device.token < 0) continue;
    SampleAndEmit(r, rows > 0 ? out.Row(static_cast<int>(i), rows - 1) : std::span<const float>(), device);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.steps;
    stats_.prompt_tokens_computed += prompt_tokens;
    consecutive_failed_steps_ = 0;
  }
  if (config_.step_observer) {
    config_.step_observer(StepReport{static_cast<int>(batch.chunks.size()), batch.num_tokens,
                                     std::chrono::duration<double>(Clock::now() - step_start).count()});
  }
}

void Engine::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !cancels_.empty() || !lora_ops_.empty() || scheduler_.HasWork(); });
    if (stopping_) break;
    round_start_ = Clock::now();
    TakeInbox(lock);
    RunLoraOps(lock);
    lock.unlock();
    ExpireDeadlines();
    Step();
    for (auto it = requests_.begin(); it != requests_.end();) {
      it = it->second->finished ? requests_.erase(it) : std::next(it);
    }
    PublishStats();
    lock.lock();
    FreeReplacedLorasLocked();
    round_start_.reset();
  }
  // Shutdown: everything still here ends as cancelled.
  std::vector<std::unique_ptr<RequestState>> arrived;
  arrived.swap(inbox_);
  FailLoraOps(lora_ops_);
  lock.unlock();
  Adopt(arrived);
  for (auto& [id, state] : requests_) {
    Finish(*state, FinishReason::kCancelled, absl::UnavailableError("the engine shut down"));
  }
  requests_.clear();
  PublishStats();
}

}  // namespace arach
