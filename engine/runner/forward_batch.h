// What one forward step computes: new tokens of several sequences, flattened, over the paged KV cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/attention_params.h"
#include "engine/features/variant.h"
#include "engine/kv/block_allocator.h"

namespace arach {

// Which logits a sequence wants back from the step.
enum class LogitsMode {
  kNone,  // a prefill chunk that is not the last one
  kLast,  // the last new token (generation)
  kAll,   // every new token (scoring)
};

struct SequenceInput {
  std::span<const int32_t> tokens;        // new tokens of this step (at least one)
  int start_position = 0;                 // tokens of this sequence already in the cache
  const BlockTable* block_table = nullptr;  // must cover positions [0, start_position + tokens.size())
  LogitsMode logits = LogitsMode::kLast;
  Variant variant;                        // ARACH adds one hub row per new token; skip runs the adapter
  bool attention_mass = false;            // return this step's attention-mass sums (diagnostics)
};

struct ForwardBatch {
  std::vector<SequenceInput> sequences;
};

// The attention-mass diagnostics of one step (AttentionMassKind), for every layer and sequence:
// sums over the step's rows of each sequence that asked (other sequences' slots are not meaningful).
struct StepAttentionMass {
  int num_layers = 0;
  int num_sequences = 0;
  int num_heads = 0;
  std::vector<float> sums;  // [num_layers, num_sequences, kAttentionMassKinds, num_heads]; empty: nobody asked

  float At(int layer, int seq, AttentionMassKind kind, int head) const {
    return sums[((static_cast<size_t>(layer) * num_sequences + seq) * kAttentionMassKinds + kind) * num_heads + head];
  }
};

// Logits of the rows the sequences asked for, in sequence order.
struct ForwardOutput {
  int vocab_size = 0;
  std::vector<float> logits;      // [num_rows, vocab_size]
  std::vector<int> row_start;     // [num_sequences + 1]: sequence s owns rows [row_start[s], row_start[s+1])
  StepAttentionMass attention_mass;  // when some sequence set SequenceInput::attention_mass

  int num_rows(int seq) const { return row_start[seq + 1] - row_start[seq]; }
  // Logits of row `i` of sequence `seq`.
  std::span<const float> Row(int seq, int i) const {
    return {logits.data() + static_cast<size_t>(row_start[seq] + i) * vocab_size, static_cast<size_t>(vocab_size)};
  }
};

}  // namespace arach
