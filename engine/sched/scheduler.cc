#include "engine/sched/scheduler.h"

#include <algorithm>
#include <limits>

namespace arach {

Scheduler::Scheduler(const SchedulerConfig& config, BlockAllocator& allocator) : config_(config), allocator_(allocator) {}

void Scheduler::Add(Sequence* seq) {
  seq->state = SequenceState::kWaiting;
  (seq->background ? background_waiting_ : waiting_).push_back(seq);
}

bool Scheduler::EnsureBlocks(Sequence& seq, int num_tokens) {
  return seq.blocks.Reserve(num_tokens, allocator_).ok();
}

void Scheduler::Preempt(Sequence& seq) {
  seq.DropDrafts();
  seq.blocks.ReleaseAll(allocator_);
  seq.num_computed = 0;
  seq.num_registered_blocks = 0;
  seq.last_block_hash = 0;
  seq.state = SequenceState::kWaiting;
  ++seq.num_preemptions;
  ++preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), &seq));
  (seq.background ? background_waiting_ : waiting_).push_front(&seq);  // first in line to come back
}

Scheduler::PrefixMatch Scheduler::MatchPrefix(Sequence& seq) {
  if (!config_.enable_prefix_caching || seq.ComputesWholePrompt() || seq.num_computed > 0) {
    return {};
  }
  const int block_size = seq.blocks.block_size();
  // Only blocks before the last token: at least one token is always computed to produce logits.
  const int candidates = (static_cast<int>(seq.tokens.size()) - 1) / block_size;
  BlockContent content;
  content.variant_key = seq.variant.CacheKey();
  content.cache_namespace = seq.cache_namespace;
  int matched = 0;
  int queried = 0;
  for (; matched < candidates; ++matched) {
    ++queried;
    content.tokens.assign(seq.tokens.begin() + matched * block_size, seq.tokens.begin() + (matched + 1) * block_size);
    const std::optional<int32_t> block = allocator_.Lookup(content);
    if (!block) break;
    seq.blocks.Append(*block);
    content.parent_hash = content.Hash();
  }
  seq.num_registered_blocks = matched;
  seq.last_block_hash = matched > 0 ? content.parent_hash : 0;
  seq.num_computed = matched * block_size;
  ReleaseOutOfWindow(seq);
  return {seq.num_computed, queried, matched};
}

void Scheduler::ForgetPrefixHits(Sequence& seq) {
  seq.blocks.ReleaseAll(allocator_);
  seq.num_computed = seq.num_registered_blocks = seq.num_cached_prompt_tokens = 0;
  seq.last_block_hash = 0;
}

bool Scheduler::NextBlockIsBeingComputed(const Sequence& seq) const {
  if (!config_.enable_prefix_caching || seq.ComputesWholePrompt()) return false;
  const int block_size = seq.blocks.block_size();
  const int block = seq.num_registered_blocks;  // the first one not found in the cache
  const size_t end = static_cast<size_t>(block + 1) * static_cast<size_t>(block_size);
  if (end + 1 > seq.tokens.size()) return false;  // not a block MatchPrefix could reuse (the last token is always computed)
  const uint64_t variant_key = seq.variant.CacheKey();
  for (const Sequence* other : running_) {
    if (other->background && !seq.background) continue;  // background work computes a few tokens a step: live work never waits for it
    // At the same place of the same chain (same cached blocks before), with that block's tokens known, not yet computed.
    if (other->num_registered_blocks != block || other->last_block_hash != seq.last_block_hash ||
        static_cast<size_t>(other->num_verified()) < end) {
      continue;
    }
    if (other->variant.CacheKey() != variant_key || other->cache_namespace != seq.cache_namespace) continue;
    if (std::equal(seq.tokens.begin() + static_cast<std::ptrdiff_t>(end - block_size), seq.tokens.begin() + static_cast<std::ptrdiff_t>(end),
                   other->tokens.begin() + static_cast<std::ptrdiff_t>(end - block_size))) {
      return true;
    }
  }
  return false;
}

void Scheduler::ReleaseOutOfWindow(Sequence& seq) {
  // The next query sits at position num_computed and sees [num_computed - window + 1, num_computed].
  // Drafts count as not computed: the next query may sit at the first of them, if the engine rejects it.
  const int next_query = std::min(seq.num_computed, seq.num_verified());
  if (config_.sliding_window > 0) seq.blocks.ReleaseBefore(next_query - config_.sliding_window + 1, allocator_);
}

ScheduledBatch Scheduler::Schedule(std::chrono::steady_clock::time_point now) {
  ScheduledBatch batch;
  int budget = config_.max_num_batched_tokens;
  PreemptForPriority(batch, now);
  const int preempted_for_priority = batch.num_live_preempted;  // these made room on purpose: admission goes on
  // Live work first; background work only with the budget, sequence slots and blocks live work leaves.
  ScheduleRunning(/*background=*/false, batch, budget);
  bool lora_held_back = false;
  if (batch.num_live_preempted == preempted_for_priority) AdmitWaiting(/*background=*/false, batch, budget, now, lora_held_back);
  const bool live_work = !batch.chunks.empty() || !waiting_.empty();
  int background_budget = std::min(budget, live_work ? config_.background_tokens_beside_live : config_.background_tokens_per_step);
  ScheduleRunning(/*background=*/true, batch, background_budget);
  if (batch.preempted.empty()) AdmitWaiting(/*background=*/true, batch, background_budget, now, lora_held_back);
  return batch;
}

int Scheduler::EffectivePriority(const Sequence& seq, std::chrono::steady_clock::time_point now) const {
  if (config_.priority_aging_seconds <= 0 || seq.state != SequenceState::kWaiting) return seq.priority;
  const double waited = std::chrono::duration<double>(now - seq.arrival).count();
  const int64_t steps = waited > 0 ? static_cast<int64_t>(waited / config_.priority_aging_seconds) : 0;
  return static_cast<int>(std::max<int64_t>(int64_t{seq.priority} - steps, -(int64_t{1} << 30)));
}

Sequence* Scheduler::LowestPriorityLive() const {
  Sequence* lowest = nullptr;
  for (Sequence* seq : running_) {  // admission order: a later one wins a tie
    if (!seq->background && (lowest == nullptr || seq->priority >= lowest->priority)) lowest = seq;
  }
  return lowest;
}

Sequence* Scheduler::PickVictim(bool for_background) const {
  // The newest background sequence, else (for live work only) the lowest-priority live one. Neither was
  // scheduled earlier in this step: background sequences are scheduled after all live ones, and live ones
  // in priority order, so the lowest-priority one comes last.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if ((*it)->background) return *it;
  }
  if (for_background) return nullptr;
  return LowestPriorityLive();
}

std::deque<Sequence*>::iterator Scheduler::NextWaiting(std::deque<Sequence*>& queue, std::chrono::steady_clock::time_point now,
                                                       const std::vector<const Sequence*>& skip) {
  auto skipped = [&](const Sequence* seq) { return std::find(skip.begin(), skip.end(), seq) != skip.end(); };
  auto best = queue.end();
  int best_priority = 0;
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if (skipped(*it)) continue;
    const int priority = EffectivePriority(**it, now);
    if (best == queue.end() || priority < best_priority) {
      best = it;
      best_priority = priority;
    }
  }
  return best;
}

bool Scheduler::PreemptAdapterFor(const Sequence& next, ScheduledBatch& batch) {
  struct InUse {
    int lora = 0;
    int best_priority = 0;  // of its running sequences (background ones: the worst)
    int sequences = 0;
  };
  std::vector<InUse> in_use;
  for (const Sequence* seq : running_) {
    if (seq->lora == 0) continue;
    auto it = std::find_if(in_use.begin(), in_use.end(), [&](const InUse& u) { return u.lora == seq->lora; });
    const int priority = seq->background ? std::numeric_limits<int>::max() : seq->priority;
    if (it == in_use.end()) {
      in_use.push_back({seq->lora, priority, 1});
    } else {
      it->best_priority = std::min(it->best_priority, priority);
      ++it->sequences;
    }
  }
  const InUse* victim = nullptr;
  for (const InUse& u : in_use) {
    if (u.best_priority <= next.priority) continue;  // one of its sequences is as urgent: it keeps its place
    if (victim == nullptr || u.best_priority > victim->best_priority ||
        (u.best_priority == victim->best_priority && u.sequences < victim->sequences)) {
      victim = &u;
    }
  }
  if (victim == nullptr) return false;
  const int lora = victim->lora;
  std::vector<Sequence*> preempted;
  for (Sequence* seq : running_) {
    if (seq->lora == lora) preempted.push_back(seq);
  }
  // The newest first: each goes to the front of the queue, so they come back in their order.
  for (auto it = preempted.rbegin(); it != preempted.rend(); ++it) PreemptForStep(**it, batch);
  return true;
}

void Scheduler::PreemptForPriority(ScheduledBatch& batch, std::chrono::steady_clock::time_point now) {
  while (!waiting_.empty()) {
    Sequence& next = **NextWaiting(waiting_, now);
    if (bool held_back = false; !LoraFits(next, held_back)) {
      if (!PreemptAdapterFor(next, batch)) return;
      continue;
    }
    Sequence* lowest = LowestPriorityLive();
    if (lowest == nullptr || lowest->priority <= next.priority) return;  // base priorities: aging never preempts
    const int first_chunk = std::min(next.num_uncomputed(), config_.max_num_batched_tokens);
    const int blocks_needed = next.blocks.BlocksNeeded(next.num_computed + first_chunk);
    const bool slots_full = static_cast<int>(running_.size()) >= config_.max_num_seqs;
    if (!slots_full && allocator_.num_free() >= blocks_needed) return;  // it fits beside the running ones
    PreemptForStep(*lowest, batch);
  }
}

void Scheduler::PreemptForStep(Sequence& victim, ScheduledBatch& batch) {
  Preempt(victim);
  batch.preempted.push_back(&victim);
  if (!victim.background) ++batch.num_live_preempted;
}

void Scheduler::ScheduleRunning(bool background, ScheduledBatch& batch, int& budget) {
  // This class's running sequences by priority, then admission order (a snapshot: preemption edits running_).
  std::vector<Sequence*> order;
  for (Sequence* seq : running_) {
    if (seq->background == background) order.push_back(seq);
  }
  std::stable_sort(order.begin(), order.end(), [](const Sequence* a, const Sequence* b) { return a->priority < b->priority; });
  // Sequences still to schedule that have a token to compute: drafts leave each of them a token of the budget.
  int waiting_for_a_token =
      static_cast<int>(std::count_if(order.begin(), order.end(), [](const Sequence* s) { return s->num_uncomputed() > 0; }));
  for (Sequence* candidate : order) {
    if (budget <= 0) break;
    Sequence& seq = *candidate;
    if (seq.num_uncomputed() > 0) --waiting_for_a_token;
    if (seq.state != SequenceState::kRunning) continue;  // preempted earlier in this step
    // Drafts only in the budget the other sequences' next tokens leave, never costing another sequence its blocks.
    if (const int over = seq.num_uncomputed() - std::max(1, budget - waiting_for_a_token); seq.num_draft > 0 && over > 0) {
      seq.DropDrafts(over);
    }
    int n = std::min(seq.num_uncomputed(), budget);
    if (n == 0) continue;  // nothing new to compute (the engine finishes such sequences)
    bool scheduled = true;
    while (!EnsureBlocks(seq, seq.num_computed + n)) {
      if (seq.num_draft > 0) {  // fewer drafts, down to none, before anyone is preempted for them
        seq.DropDrafts(1);
        --n;
        continue;
      }
      Sequence* victim = PickVictim(background);
      if (victim == nullptr) victim = &seq;
      PreemptForStep(*victim, batch);
      if (victim == &seq) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;  // seq was the newest of its class: nothing after it is left
    batch.chunks.push_back({&seq, seq.num_computed, n, seq.num_computed + n == static_cast<int>(seq.tokens.size())});
    batch.num_tokens += n;
    budget -= n;
  }
}

bool Scheduler::LoraFits(const Sequence& seq, bool& held_back) const {
  if (config_.max_loras <= 0 || seq.lora == 0) return true;
  if (held_back) return false;
  std::vector<int> in_use;
  for (const Sequence* running : running_) {
    if (running->lora == seq.lora) return true;
    if (running->lora != 0 && std::find(in_use.begin(), in_use.end(), running->lora) == in_use.end()) in_use.push_back(running->lora);
  }
  held_back = static_cast<int>(in_use.size()) >= config_.max_loras;
  return !held_back;
}

void Scheduler::AdmitWaiting(bool background, ScheduledBatch& batch, int& budget, std::chrono::steady_clock::time_point now,
                             bool& lora_held_back) {
  std::deque<Sequence*>& queue = background ? background_waiting_ : waiting_;
  std::vector<const Sequence*> passed_over;  // in this step: waiting for a block being computed, or for a LoRA place
  while (!queue.empty() && budget > 0) {
    if (static_cast<int>(running_.size()) >= config_.max_num_seqs) {
      Sequence* victim = background ? nullptr : PickVictim(/*for_background=*/true);  // a live request takes a background slot
      if (victim == nullptr) break;
      PreemptForStep(*victim, batch);
      continue;
    }
    const auto next = NextWaiting(queue, now, passed_over);
    if (next == queue.end()) break;  // each one left waits for a block a running sequence is computing, or a LoRA place
    Sequence& seq = **next;
    if (!LoraFits(seq, lora_held_back)) {
      passed_over.push_back(&seq);
      ++lora_deferred_admissions_;
      continue;
    }
    const PrefixMatch match = MatchPrefix(seq);
    seq.num_cached_prompt_tokens = match.tokens;
    if (NextBlockIsBeingComputed(seq)) {
      ForgetPrefixHits(seq);
      passed_over.push_back(&seq);
      ++deferred_admissions_;
      continue;
    }
    const int n = std::min(seq.num_uncomputed(), budget);
    if (!EnsureBlocks(seq, seq.num_computed + n)) {
      ForgetPrefixHits(seq);  // try again (next step, or after a preemption)
      Sequence* victim = background ? nullptr : PickVictim(/*for_background=*/true);  // background blocks go first
      if (victim == nullptr) break;
      PreemptForStep(*victim, batch);
      continue;
    }
    prefix_queries_ += match.queried;  // counted once admitted (a sequence sent back to wait looks again later)
    prefix_hits_ += match.found;
    queue.erase(next);
    seq.state = SequenceState::kRunning;
    running_.push_back(&seq);
    batch.admitted.push_back(&seq);
    batch.chunks.push_back({&seq, seq.num_computed, n, seq.num_computed + n == static_cast<int>(seq.tokens.size())});
    batch.num_tokens += n;
    budget -= n;
  }
}

void Scheduler::CompleteStep(const ScheduledBatch& batch) {
  for (const ScheduledChunk& chunk : batch.chunks) {
    Sequence& seq = *chunk.seq;
    seq.num_computed = chunk.start + chunk.num_tokens;
    if (!config_.enable_prefix_caching) continue;
    // Only blocks of verified tokens: a draft the engine rejects is overwritten in place.
    const int verified = std::min(seq.num_computed, seq.num_verified());
    const int block_size = seq.blocks.block_size();
    BlockContent content;
    content.variant_key = seq.variant.CacheKey();
    content.cache_namespace = seq.cache_namespace;
    for (int b = seq.num_registered_blocks; b < verified / block_size; ++b) {
      content.parent_hash = seq.last_block_hash;
      content.tokens.assign(seq.tokens.begin() + b * block_size, seq.tokens.begin() + (b + 1) * block_size);
      allocator_.Register(seq.blocks.blocks()[b], content);
      seq.last_block_hash = content.Hash();
      seq.num_registered_blocks = b + 1;
    }
  }
  for (const ScheduledChunk& chunk : batch.chunks) ReleaseOutOfWindow(*chunk.seq);  // after registering: they stay cached
}

void Scheduler::Remove(Sequence* seq) {
  if (const auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end()) running_.erase(it);
  if (const auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end()) waiting_.erase(it);
  if (const auto it = std::find(background_waiting_.begin(), background_waiting_.end(), seq); it != background_waiting_.end()) {
    background_waiting_.erase(it);
  }
  seq->blocks.ReleaseAll(allocator_);
  seq->state = SequenceState::kFinished;
}

}  // namespace arach
