// A sequence as the scheduler sees it: its tokens, how many of them have K/V in the cache, its blocks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/variant/variant.h"
#include "engine/kv/block_allocator.h"

namespace arach {

enum class SequenceState {
  kWaiting,   // queued, or preempted and waiting to be recomputed
  kRunning,   // holds blocks; scheduled every step until it finishes
  kFinished,  // removed from the scheduler
};

struct Sequence {
  explicit Sequence(int block_size) : blocks(block_size) {}

  uint64_t id = 0;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int prompt_len = 0;
  Variant variant;
  uint64_t cache_namespace = 0;       // prefix-cache namespace (CacheNamespaceOf: the cache salt and the LoRA slot)
  int lora = 0;                       // its LoRA adapter (SequenceInput::lora: 0 none, else the runner's index + 1)
  bool want_prompt_logprobs = false;  // every prompt row is scored on the device; no prefix-cache reuse
  bool want_attention_diagnostics = false;   // prompt chunks return attention-mass sums; no prefix-cache reuse
  bool want_every_prompt_row = false;  // an embedding pooled over more than the last row (mean, first token); no prefix-cache reuse
  bool background = false;            // low priority: spare budget only, preempted first (shadow scoring)
  int priority = 0;                   // among live sequences: lower first (EngineRequest::priority)
  std::chrono::steady_clock::time_point arrival{};  // when it was submitted (aging of a waiting priority)

  SequenceState state = SequenceState::kWaiting;
  int num_computed = 0;               // leading tokens whose K/V are in the cache
  BlockTable blocks;
  int num_registered_blocks = 0;      // leading full blocks registered in the prefix cache
  uint64_t last_block_hash = 0;       // chain hash of block num_registered_blocks - 1 (0: none)
  int num_cached_prompt_tokens = 0;   // prompt tokens found in the prefix cache at the last admission
  int num_preemptions = 0;
  // Speculative decoding: the last num_draft tokens are drafts, not yet verified (the engine appends them before a
  // step and verifies them after it; the scheduler drops them where they do not fit the step). Never in the prefix
  // cache, never counted as generated.
  int num_draft = 0;

  // Whether every prompt row must be computed (what the request reads of them), so that cached blocks are not reused.
  bool ComputesWholePrompt() const { return want_prompt_logprobs || want_attention_diagnostics || want_every_prompt_row; }
  int num_generated() const { return static_cast<int>(tokens.size()) - num_draft - prompt_len; }
  int num_uncomputed() const { return static_cast<int>(tokens.size()) - num_computed; }
  int num_verified() const { return static_cast<int>(tokens.size()) - num_draft; }  // prompt and generated tokens
  // Drops the last `count` drafts (all by default).
  void DropDrafts(int count = -1) {
    const int dropped = count < 0 ? num_draft : std::min(count, num_draft);
    tokens.resize(tokens.size() - static_cast<size_t>(dropped));
    num_draft -= dropped;
  }
};

}  // namespace arach
