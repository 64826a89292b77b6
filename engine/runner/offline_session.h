// Runs whole requests on a ModelRunner without a scheduler (tools, tests, benchmarks): a fixed set of
// sequences is prefilled (optionally in chunks) and then decoded together, greedily.
// The serving engine's scheduler replaces this loop for live traffic.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/variant/variant.h"
#include "engine/kv/block_allocator.h"
#include "engine/runner/model_runner.h"
#include "engine/sampling/logprobs.h"

namespace arach {

struct GreedyOptions {
  Variant variant;                  // the variant every sequence runs under
  int max_new_tokens = 32;
  std::vector<int> stop_token_ids;  // generation of a sequence ends after it emits one of these
  int prefill_chunk = 0;            // prompt tokens per step and sequence; 0 = the whole prompt at once
  std::vector<Variant> per_sequence;  // when non-empty: the variant of each sequence (overrides `variant`)
  // Called after every step with the number of KV blocks each sequence holds.
  std::function<void(int step, const std::vector<int>& blocks_held)> on_step;
};

class OfflineSession {
 public:
  explicit OfflineSession(ModelRunner& runner);

  // Called for each row of logits: sequence index, position of the token whose next-token logits these are.
  using LogitsFn = std::function<void(int seq, int position, std::span<const float> logits)>;

  // Feeds every sequence through the cache, `chunk` tokens per step (0 = all at once), in one batch,
  // and hands the logits of every position to `fn`. Blocks are released afterwards.
  // `variants` gives each sequence's variant (empty: all base).
  absl::Status ForEachPosition(const std::vector<std::vector<int32_t>>& sequences, int chunk, const LogitsFn& fn,
                               const std::vector<Variant>& variants = {});

  // Called for each scored position: sequence index, position, the row's score against its target.
  using ScoreFn = std::function<void(int seq, int position, const RowScore& score)>;

  // As ForEachPosition, but each position's row is scored where it is computed against targets[s][position] (the
  // token it predicts; < 0: none) and only the score comes back (Backend::ScoreRows). targets[s]: one per token
  // of sequences[s].
  absl::Status ScoreEachPosition(const std::vector<std::vector<int32_t>>& sequences,
                                 const std::vector<std::vector<int32_t>>& targets, int chunk, const ScoreFn& fn,
                                 const std::vector<Variant>& variants = {});

  // Logits of every position of `ids` ([T, V] row-major).
  absl::StatusOr<std::vector<float>> Logits(const std::vector<int32_t>& ids, int chunk = 0, const Variant& variant = {});

  // Greedy continuations of `prompts` decoded together in one batch; returns the new tokens of each.
  absl::StatusOr<std::vector<std::vector<int32_t>>> GenerateGreedy(const std::vector<std::vector<int32_t>>& prompts,
                                                                   const GreedyOptions& options);

  BlockAllocator& allocator() { return allocator_; }

 private:
  // Feeds the sequences as ForEachPosition does; `prepare` completes each step's input for sequence s (its tokens
  // from `begin`), `consume` reads the step's output for batch entry i (sequence s, tokens from `begin`).
  using PrepareFn = std::function<void(SequenceInput& input, int s, int begin)>;
  using ConsumeFn = std::function<void(const ForwardOutput& out, int i, int s, int begin)>;
  absl::Status Feed(const std::vector<std::vector<int32_t>>& sequences, int chunk, const std::vector<Variant>& variants,
                    const PrepareFn& prepare, const ConsumeFn& consume);

  // The checks of the engine's requests, for sequence `index` of a call: known token ids, within the
  // context, a variant the model can run.
  absl::Status CheckInput(const std::vector<int32_t>& tokens, const Variant& variant, size_t index) const;

  ModelRunner& runner_;
  BlockAllocator allocator_;
  ForwardOutput output_;  // each step's logits, its buffers reused by the next step
};

}  // namespace arach
