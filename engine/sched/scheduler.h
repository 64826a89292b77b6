// Continuous batching over the paged KV cache. Every step:
//  1. running sequences, oldest first, get their next tokens (one for decode, a chunk for an unfinished
//     prompt) within the step's token budget; when blocks run out, the newest running sequence is
//     preempted (its blocks freed, recomputed later from its tokens), never dropped;
//  2. if nothing was preempted, waiting sequences are admitted in arrival order while the budget,
//     max_num_seqs and the free blocks allow; a long prompt is admitted with a partial chunk, so
//     prefill is chunked and never stalls the decodes.
// Live sequences carry a priority (lower first): running ones are scheduled by priority, then as above;
// waiting ones are admitted by priority, then arrival, where a waiting sequence's priority improves by one
// for every priority_aging_seconds it has waited (so nothing starves); the victim of a preemption is the
// lowest-priority running sequence, the newest among equals. A waiting sequence of strictly better priority
// than a running one takes its place when the batch is full (slots or blocks): the running one is preempted.
// With every priority equal this is the arrival-order behaviour above.
// Background sequences (Sequence::background: shadow scoring) form a second priority class: they run only
// with the budget, slots and blocks that live sequences leave in a step (at most background_tokens_per_step,
// and background_tokens_beside_live when the step has live work), and are preempted first, both when a live
// sequence needs blocks and when a live request waits for a slot or blocks.
// On admission, full prompt blocks found in the prefix cache (same tokens, same variant) are reused; a waiting
// sequence whose next block a running sequence is computing right now waits for it (admitted in a later step, it
// reuses the block instead of computing it too), while those behind it may go first.
// LoRA (max_loras > 0): the running sequences use at most max_loras adapters (those the device holds at once). A
// waiting sequence of another adapter, when that many are in use, waits, and so do the LoRA sequences behind it (by
// priority and arrival) until an adapter's last sequence ends and it can go in: the adapters in use cannot keep it
// out by admitting more of their own. Sequences without an adapter are admitted around it. A live sequence of strictly
// better priority than every running sequence of an adapter takes that adapter's place: they are preempted.
#pragma once

#include <chrono>
#include <deque>
#include <vector>

#include "engine/kv/block_allocator.h"
#include "engine/sched/sequence.h"

namespace arach {

struct SchedulerConfig {
  int max_num_seqs = 64;             // running sequences at most
  int max_num_batched_tokens = 512;  // tokens (verbal rows) per step
  bool enable_prefix_caching = true;
  // The model's sliding window when every layer has one (0: none): a running sequence gives back the
  // blocks before the window of its next query, so its KV footprint stays about window + chunk.
  int sliding_window = 0;
  // Background tokens in a step that also computes live tokens. A step's time grows with its tokens (on a
  // CPU about linearly), so by default background work only runs in steps without live work; on a GPU a
  // few dozen rows beside the decodes cost little.
  int background_tokens_beside_live = 0;
  // Background tokens in any step: bounds how long a step of background work can delay a live request
  // that arrives during it.
  int background_tokens_per_step = 8;
  // A waiting sequence's priority improves by one per this many seconds of waiting (0: no aging).
  double priority_aging_seconds = 0;
  // LoRA adapters (Sequence::lora) the running sequences may use at once (0: any number).
  int max_loras = 0;
};

// Tokens [start, start + num_tokens) of `seq` in this step.
struct ScheduledChunk {
  Sequence* seq = nullptr;
  int start = 0;
  int num_tokens = 0;
  bool completes = false;  // reaches the last known token: its last row's logits give the next token
};

struct ScheduledBatch {
  std::vector<ScheduledChunk> chunks;
  std::vector<Sequence*> preempted;  // sequences preempted in this step
  std::vector<Sequence*> admitted;   // sequences that left the waiting queue in this step
  int num_tokens = 0;
  int num_live_preempted = 0;        // of `preempted`, the live (not background) ones
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, BlockAllocator& allocator);

  // Queues `seq` (not owned; it must outlive its time in the scheduler).
  void Add(Sequence* seq);
  ScheduledBatch Schedule(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // The priority a waiting sequence competes with at `now` (its own, improved by aging).
  int EffectivePriority(const Sequence& seq, std::chrono::steady_clock::time_point now) const;
  // After the forward of `batch`: advances num_computed and registers newly full blocks in the prefix cache.
  void CompleteStep(const ScheduledBatch& batch);
  // Takes `seq` out (finished or cancelled) and frees its blocks.
  void Remove(Sequence* seq);

  bool HasWork() const { return !running_.empty() || !waiting_.empty() || !background_waiting_.empty(); }
  const std::deque<Sequence*>& waiting() const { return waiting_; }  // live sequences only
  const std::deque<Sequence*>& background_waiting() const { return background_waiting_; }
  const std::vector<Sequence*>& running() const { return running_; }
  const SchedulerConfig& config() const { return config_; }
  int64_t num_preemptions() const { return preemptions_; }
  int64_t prefix_cache_queries() const { return prefix_queries_; }  // prompt blocks looked up by admitted sequences
  int64_t prefix_cache_hits() const { return prefix_hits_; }        // of which found
  // Admissions put off by a step because the next prompt block was being computed by a running sequence.
  int64_t deferred_admissions() const { return deferred_admissions_; }
  // Admissions put off by a step because the sequence's LoRA adapter had no place beside those in use (max_loras).
  int64_t lora_deferred_admissions() const { return lora_deferred_admissions_; }

 private:
  // Blocks so that positions [0, num_tokens) of seq are covered; false when the pool cannot.
  bool EnsureBlocks(Sequence& seq, int num_tokens);
  void Preempt(Sequence& seq);
  // Preempts `victim` and records it in `batch`.
  void PreemptForStep(Sequence& victim, ScheduledBatch& batch);
  // Which running sequence gives up its blocks: the newest background one, else (unless the blocks are
  // for background work) the live one of the lowest priority, the newest among equals; null when there is none.
  Sequence* PickVictim(bool for_background) const;
  // The lowest-priority running live sequence (the newest among equals), or null.
  Sequence* LowestPriorityLive() const;
  // The waiting sequence to admit next from `queue`: the best effective priority, then queue order; those in `skip`
  // are passed over (end() when nothing else is left).
  std::deque<Sequence*>::iterator NextWaiting(std::deque<Sequence*>& queue, std::chrono::steady_clock::time_point now,
                                              const std::vector<const Sequence*>& skip = {});
  // Before a step: while the best waiting live sequence has a strictly better priority than the lowest running
  // one and the batch is full for it (no slot, or not the blocks of its first chunk), preempts that one. Where its
  // LoRA adapter has no place (max_loras in use), PreemptAdapterFor makes one.
  void PreemptForPriority(ScheduledBatch& batch, std::chrono::steady_clock::time_point now);
  // Preempts every running sequence of one adapter in use whose sequences all have a strictly worse priority than
  // `next` (background ones count as the worst): of those, the adapter whose best sequence is the least urgent,
  // then the one with the fewest. False where there is none.
  bool PreemptAdapterFor(const Sequence& next, ScheduledBatch& batch);
  // Steps 1 and 2 for one class (live or background).
  void ScheduleRunning(bool background, ScheduledBatch& batch, int& budget);
  // `lora_held_back`: LoraFits' flag, shared by both classes' admissions in a step.
  void AdmitWaiting(bool background, ScheduledBatch& batch, int& budget, std::chrono::steady_clock::time_point now,
                    bool& lora_held_back);
  struct PrefixMatch {
    int tokens = 0;   // prompt tokens covered by the blocks found
    int queried = 0;  // blocks looked up
    int found = 0;    // of which found
  };
  // Reuses cached full blocks of seq's prefix.
  PrefixMatch MatchPrefix(Sequence& seq);
  // Gives back what MatchPrefix found (seq stays waiting).
  void ForgetPrefixHits(Sequence& seq);
  // Whether the block of `seq` after its prefix-cache hits is one a running sequence is about to compute (same chain,
  // tokens, variant and namespace): `seq` then waits and finds it in the cache rather than computing it again (a burst
  // of requests with one long system prompt, the n choices of one prompt).
  bool NextBlockIsBeingComputed(const Sequence& seq) const;
  // Under a sliding window: gives back the blocks no query after num_computed will read.
  void ReleaseOutOfWindow(Sequence& seq);
  // Whether `seq`'s LoRA adapter may run beside the running sequences' (config_.max_loras). `held_back`: set once
  // a LoRA sequence had to wait in this round of admissions; every LoRA sequence after it waits too.
  bool LoraFits(const Sequence& seq, bool& held_back) const;

  SchedulerConfig config_;
  BlockAllocator& allocator_;
  std::deque<Sequence*> waiting_;             // live
  std::deque<Sequence*> background_waiting_;  // background
  std::vector<Sequence*> running_;  // arrival order, oldest first
  int64_t preemptions_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
  int64_t deferred_admissions_ = 0;
  int64_t lora_deferred_admissions_ = 0;
};

}  // namespace arach
