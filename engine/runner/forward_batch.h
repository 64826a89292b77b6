// What one forward step computes: new tokens of several sequences, flattened, over the paged KV cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/attention_params.h"
#include "engine/core/uninitialized_allocator.h"
#include "engine/variant/variant.h"
#include "engine/kv/block_allocator.h"
#include "engine/sampling/sampler.h"

namespace arach {

// Which logits of a sequence come back to the host from the step.
enum class LogitsMode {
  kNone,  // a prefill chunk that is not the last one
  kLast,  // the last new token (generation)
  kAll,   // every new token (scoring)
};

// The new tokens of a sequence whose hidden states a step returns (SequenceInput::return_hidden), as one row.
enum class HiddenRows {
  kNone,
  kLast,   // the last new token's
  kFirst,  // the first new token's
  kSum,    // the sum of every new token's (added on the device in float32: one row comes back, not the chunk's)
};

struct SequenceInput {
  std::span<const int32_t> tokens;        // new tokens of this step (at least one)
  int start_position = 0;                 // tokens of this sequence already in the cache
  const BlockTable* block_table = nullptr;  // must cover positions [0, start_position + tokens.size())
  LogitsMode logits = LogitsMode::kLast;
  Variant variant;                        // ARACH adds one hub row per new token; skip runs the adapter
  // The LoRA adapter its rows (verbal and hub) run with: 0 none, i the runner's (i - 1)-th (FeatureWeights::loras).
  int lora = 0;
  bool attention_diagnostics = false;     // return this step's attention-mass sums
  // Where the backend samples on the device (ModelRunner::samples_on_device): pick the next token from the last
  // new token's logits there (ForwardOutput::sampled_tokens), with these parameters (its logits span is not read;
  // it must live until Execute returns). `logits` still says which rows come back to the host. Ignored elsewhere.
  const SamplerInput* sample = nullptr;
  // When not empty ([tokens.size()]): every new token's row is scored on the device against the token it
  // predicts, targets[i] (< 0: none; the argmax only), and only the scores come back (ForwardOutput::scores):
  // prompt log-probs, ranks and greedy flags without moving the rows' logits. Independent of `logits`.
  std::span<const int32_t> score_targets{};
  int score_top_n = 0;  // with score_targets: each scored row's most likely tokens to return too (at most 20)
  // Which new tokens' hidden states after the final norm (the rows the LM head reads) come back
  // (ForwardOutput::hidden): an embedding's. Independent of `logits`.
  HiddenRows return_hidden = HiddenRows::kNone;
};

struct ForwardBatch {
  std::vector<SequenceInput> sequences;
};

// Logits of the rows the sequences asked for, in sequence order. ModelRunner::Execute overwrites every field; a
// caller that passes the same object each step keeps its buffers' capacity, so the host memory of a step that
// returns many rows (the offline session's every-position logits at a 151k vocabulary: 0.6 MB per row) is
// allocated, and faulted in by the OS, only when a step returns more rows than any before it.
struct ForwardOutput {
  int vocab_size = 0;
  UninitializedVector<float> logits;  // [num_rows, vocab_size]: written in full by the download
  std::vector<int> row_start;     // [num_sequences + 1]: sequence s owns rows [row_start[s], row_start[s+1])
  StepAttentionDiagnostics attention_diagnostics;  // when some sequence set SequenceInput::attention_diagnostics
  // [num_sequences] when some sequence was sampled on the device: its token, or -1 for the others; else empty.
  std::vector<int32_t> sampled_tokens;
  std::vector<float> sampled_logprobs;  // beside sampled_tokens: each token's log-prob under the model's distribution
  // Scores of the sequences that gave SequenceInput::score_targets, in sequence order: sequence s owns
  // scores[score_start[s], score_start[s+1]) ([num_sequences + 1]), one per new token.
  std::vector<RowScore> scores;
  std::vector<int> score_start;
  // [scores.size(), score_top_n]: each scored row's most likely tokens, most likely first; score_top_n is the
  // largest SequenceInput::score_top_n of the step (a sequence that asked for fewer reads its first ones).
  int score_top_n = 0;
  std::vector<TokenLogprob> score_top;
  // The hidden states the sequences asked for (SequenceInput::return_hidden): [hidden_rows, hidden_size], sequence s
  // owning rows [hidden_start[s], hidden_start[s+1]) (one row for a sequence that asked, none for the others;
  // [num_sequences + 1]; empty when no sequence asked).
  int hidden_size = 0;
  std::vector<float> hidden;
  std::vector<int> hidden_start;

  int num_rows(int seq) const { return row_start[seq + 1] - row_start[seq]; }
  std::span<const RowScore> ScoresOf(int seq) const {
    return std::span<const RowScore>(scores).subspan(score_start[seq], score_start[seq + 1] - score_start[seq]);
  }
  // The first `n` (<= score_top_n) most likely tokens of scored row `i` of sequence `seq`.
  std::span<const TokenLogprob> TopOf(int seq, int i, int n) const {
    return std::span<const TokenLogprob>(score_top).subspan(static_cast<size_t>(score_start[seq] + i) * score_top_n, n);
  }
  // The hidden state sequence `seq` asked for (SequenceInput::return_hidden): [hidden_size]; empty for the others.
  std::span<const float> HiddenOf(int seq) const {
    if (hidden_start.empty()) return {};
    return {hidden.data() + static_cast<size_t>(hidden_start[seq]) * hidden_size,
            static_cast<size_t>(hidden_start[seq + 1] - hidden_start[seq]) * hidden_size};
  }
  // Logits of row `i` of sequence `seq`.
  std::span<const float> Row(int seq, int i) const {
    return {logits.data() + static_cast<size_t>(row_start[seq] + i) * vocab_size, static_cast<size_t>(vocab_size)};
  }
};

}  // namespace arach
