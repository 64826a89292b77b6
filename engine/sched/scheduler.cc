#include "engine/sched/scheduler.h"

#include <algorithm>

namespace arach {

Scheduler::Scheduler(const SchedulerConfig& config, BlockAllocator& allocator) : config_(config), allocator_(allocator) {}

void Scheduler::Add(Sequence* seq) {
  seq->state = SequenceState::kWaiting;
  waiting_.push_back(seq);
}

bool Scheduler::EnsureBlocks(Sequence& seq, int num_tokens) {
  return seq.blocks.Reserve(num_tokens, allocator_).ok();
}

void Scheduler::Preempt(Sequence& seq) {
  seq.blocks.ReleaseAll(allocator_);
  seq.num_computed = 0;
  seq.num_registered_blocks = 0;
  seq.last_block_hash = 0;
  seq.state = SequenceState::kWaiting;
  ++seq.num_preemptions;
  ++preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), &seq));
  waiting_.push_front(&seq);  // first in line to come back
}

int Scheduler::MatchPrefix(Sequence& seq) {
  if (!config_.enable_prefix_caching || seq.want_prompt_logprobs || seq.want_attention_mass || seq.num_computed > 0) {
    return 0;
  }
  const int block_size = seq.blocks.block_size();
  // Only blocks before the last token: at least one token is always computed to produce logits.
  const int candidates = (static_cast<int>(seq.tokens.size()) - 1) / block_size;
  BlockContent content;
  content.variant_key = seq.variant.CacheKey();
  int matched = 0;
  for (; matched < candidates; ++matched) {
    ++prefix_queries_;
    content.tokens.assign(seq.tokens.begin() + matched * block_size, seq.tokens.begin() + (matched + 1) * block_size);
    const std::optional<int32_t> block = allocator_.Lookup(content);
    if (!block) break;
    ++prefix_hits_;
    seq.blocks.Append(*block);
    content.parent_hash = content.Hash();
  }
  seq.num_registered_blocks = matched;
  seq.last_block_hash = matched > 0 ? content.parent_hash : 0;
  seq.num_computed = matched * block_size;
  ReleaseOutOfWindow(seq);
  return seq.num_computed;
}

void Scheduler::ReleaseOutOfWindow(Sequence& seq) {
  // The next query sits at position num_computed and sees [num_computed - window + 1, num_computed].
  if (config_.sliding_window > 0) seq.blocks.ReleaseBefore(seq.num_computed - config_.sliding_window + 1, allocator_);
}

ScheduledBatch Scheduler::Schedule() {
  ScheduledBatch batch;
  int budget = config_.max_num_batched_tokens;

  // 1. Running sequences, oldest first.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& seq = *running_[i];
    const int n = std::min(seq.num_uncomputed(), budget);
    if (n == 0) {  // nothing new to compute (the engine finishes such sequences)
      ++i;
      continue;
    }
    bool scheduled = true;
    while (!EnsureBlocks(seq, seq.num_computed + n)) {
      Sequence& victim = *running_.back();  // the newest; never one scheduled earlier in this step
      Preempt(victim);
      batch.preempted.push_back(&victim);
      if (&victim == &seq) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;  // seq was the newest: nothing after it is left
    batch.chunks.push_back({&seq, seq.num_computed, n, seq.num_computed + n == static_cast<int>(seq.tokens.size())});
    batch.num_tokens += n;
    budget -= n;
    ++i;
  }

  // 2. Waiting sequences, in order, unless this step had to preempt.
  while (batch.preempted.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Sequence& seq = *waiting_.front();
    seq.num_cached_prompt_tokens = MatchPrefix(seq);
    const int n = std::min(seq.num_uncomputed(), budget);
    if (!EnsureBlocks(seq, seq.num_computed + n)) {
      seq.blocks.ReleaseAll(allocator_);  // give back the prefix hits; try again next step
      seq.num_computed = seq.num_registered_blocks = seq.num_cached_prompt_tokens = 0;
      seq.last_block_hash = 0;
      break;
    }
    waiting_.pop_front();
    seq.state = SequenceState::kRunning;
    running_.push_back(&seq);
    batch.admitted.push_back(&seq);
    batch.chunks.push_back({&seq, seq.num_computed, n, seq.num_computed + n == static_cast<int>(seq.tokens.size())});
    batch.num_tokens += n;
    budget -= n;
  }
  return batch;
}

void Scheduler::CompleteStep(const ScheduledBatch& batch) {
  for (const ScheduledChunk& chunk : batch.chunks) {
    Sequence& seq = *chunk.seq;
    seq.num_computed = chunk.start + chunk.num_tokens;
    if (!config_.enable_prefix_caching) continue;
    const int block_size = seq.blocks.block_size();
    BlockContent content;
    content.variant_key = seq.variant.CacheKey();
    for (int b = seq.num_registered_blocks; b < seq.num_computed / block_size; ++b) {
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
  seq->blocks.ReleaseAll(allocator_);
  seq->state = SequenceState::kFinished;
}

}  // namespace arach
