#include "engine/runner/offline_session.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/sampling/logprobs.h"

namespace arach {
namespace {

// Block tables of a set of sequences that are released however the session's call ends.
class SequenceTables {
 public:
  SequenceTables(BlockAllocator& allocator, int block_size, size_t count) : allocator_(allocator) {
    for (size_t i = 0; i < count; ++i) tables_.emplace_back(block_size);
  }
  ~SequenceTables() {
    for (BlockTable& table : tables_) table.ReleaseAll(allocator_);
  }
  BlockTable& operator[](size_t i) { return tables_[i]; }

 private:
  BlockAllocator& allocator_;
  std::vector<BlockTable> tables_;
};

}  // namespace

OfflineSession::OfflineSession(ModelRunner& runner)
    : runner_(runner), allocator_(runner.kv_cache().num_blocks()) {}

absl::Status OfflineSession::CheckInput(const std::vector<int32_t>& tokens, const Variant& variant, size_t index) const {
  const std::string field = absl::StrCat("sequences[", index, "]");
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  ARACH_RETURN_IF_ERROR(CheckTokenIds(tokens, runner_.config().vocab_size, field));
  if (static_cast<int>(tokens.size()) > runner_.config().max_positions) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", tokens.size(), " tokens exceed the model's context of ",
                                                   runner_.config().max_positions));
  }
  return variant.Validate(runner_.has_adapter());
}

absl::Status OfflineSession::ForEachPosition(const std::vector<std::vector<int32_t>>& sequences, int chunk,
                                             const LogitsFn& fn, const std::vector<Variant>& variants) {
  return Feed(
      sequences, chunk, variants, [](SequenceInput& input, int, int) { input.logits = LogitsMode::kAll; },
      [&](const ForwardOutput& out, int i, int s, int begin) {
        for (int r = 0; r < out.num_rows(i); ++r) fn(s, begin + r, out.Row(i, r));
      });
}

absl::Status OfflineSession::ScoreEachPosition(const std::vector<std::vector<int32_t>>& sequences,
                                               const std::vector<std::vector<int32_t>>& targets, int chunk, const ScoreFn& fn,
                                               const std::vector<Variant>& variants) {
  if (targets.size() != sequences.size()) return absl::InvalidArgumentError("ScoreEachPosition: one target list per sequence");
  for (size_t s = 0; s < sequences.size(); ++s) {
    if (targets[s].size() != sequences[s].size()) {
      return absl::InvalidArgumentError(absl::StrCat("ScoreEachPosition: sequence ", s, " has ", sequences[s].size(),
                                                     " tokens and ", targets[s].size(), " targets"));
    }
    for (int32_t target : targets[s]) {
      if (target >= runner_.config().vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("ScoreEachPosition: sequence ", s, " has target ", target,
                                                       ", outside the vocabulary of ", runner_.config().vocab_size));
      }
    }
  }
  return Feed(
      sequences, chunk, variants,
      [&](SequenceInput& input, int s, int begin) {
        input.logits = LogitsMode::kNone;
        input.score_targets = std::span<const int32_t>(targets[s]).subspan(begin, input.tokens.size());
      },
      [&](const ForwardOutput& out, int i, int s, int begin) {
        const std::span<const RowScore> scores = out.ScoresOf(i);
        for (size_t r = 0; r < scores.size(); ++r) fn(s, begin + static_cast<int>(r), scores[r]);
      });
}

absl::Status OfflineSession::Feed(const std::vector<std::vector<int32_t>>& sequences, int chunk,
                                  const std::vector<Variant>& variants, const PrepareFn& prepare, const ConsumeFn& consume) {
  for (size_t s = 0; s < sequences.size(); ++s) {
    ARACH_RETURN_IF_ERROR(CheckInput(sequences[s], variants.empty() ? Variant{} : variants[s], s));
  }
  SequenceTables tables(allocator_, runner_.kv_cache().block_size(), sequences.size());
  std::vector<int> done(sequences.size(), 0);  // tokens already fed per sequence
  while (true) {
    ForwardBatch batch;
    std::vector<int> batch_seq;  // batch index -> sequence index
    for (size_t s = 0; s < sequences.size(); ++s) {
      const int remaining = static_cast<int>(sequences[s].size()) - done[s];
      if (remaining <= 0) continue;
      const int n = chunk > 0 ? std::min(chunk, remaining) : remaining;
      ARACH_RETURN_IF_ERROR(tables[s].Reserve(done[s] + n, allocator_));
      SequenceInput input;
      input.tokens = std::span<const int32_t>(sequences[s]).subspan(done[s], n);
      input.start_position = done[s];
      input.block_table = &tables[s];
      if (!variants.empty()) input.variant = variants[s];
      prepare(input, static_cast<int>(s), done[s]);
      batch.sequences.push_back(input);
      batch_seq.push_back(static_cast<int>(s));
    }
    if (batch.sequences.empty()) return absl::OkStatus();
    ARACH_RETURN_IF_ERROR(runner_.Execute(batch, output_));
    const ForwardOutput& out = output_;
    for (size_t i = 0; i < batch_seq.size(); ++i) {
      const int s = batch_seq[i];
      consume(out, static_cast<int>(i), s, done[s]);
      done[s] += static_cast<int>(batch.sequences[i].tokens.size());
    }
  }
}

absl::StatusOr<std::vector<float>> OfflineSession::Logits(const std::vector<int32_t>& ids, int chunk,
                                                          const Variant& variant) {
  const size_t vocab = static_cast<size_t>(runner_.config().vocab_size);
  std::vector<float> logits(ids.size() * vocab);
  ARACH_RETURN_IF_ERROR(ForEachPosition({ids}, chunk, [&](int, int position, std::span<const float> row) {
    std::copy(row.begin(), row.end(), logits.begin() + position * vocab);
  }, {variant}));
  return logits;
}

absl::StatusOr<std::vector<std::vector<int32_t>>> OfflineSession::GenerateGreedy(
    const std::vector<std::vector<int32_t>>& prompts, const GreedyOptions& options) {
  const size_t count = prompts.size();
  SequenceTables tables(allocator_, runner_.kv_cache().block_size(), count);
  std::vector<std::vector<int32_t>> tokens = prompts;  // prompt + generated so far
  std::vector<std::vector<int32_t>> generated(count);
  std::vector<int> cached(count, 0);  // tokens whose K/V are in the cache
  std::vector<bool> finished(count, options.max_new_tokens <= 0);
  int step = 0;
  if (!options.per_sequence.empty() && options.per_sequence.size() != count) {
    return absl::InvalidArgumentError("GreedyOptions::per_sequence must give one variant per prompt");
  }
  for (size_t s = 0; s < count; ++s) {
    ARACH_RETURN_IF_ERROR(CheckInput(prompts[s], options.per_sequence.empty() ? options.variant : options.per_sequence[s], s));
  }
  while (true) {
    ForwardBatch batch;
    std::vector<size_t> batch_seq;
    for (size_t s = 0; s < count; ++s) {
      if (finished[s]) continue;
      const int pending = static_cast<int>(tokens[s].size()) - cached[s];
      const int n = options.prefill_chunk > 0 ? std::min(options.prefill_chunk, pending) : pending;
      ARACH_RETURN_IF_ERROR(tables[s].Reserve(cached[s] + n, allocator_));
      SequenceInput input;
      input.tokens = std::span<const int32_t>(tokens[s]).subspan(cached[s], n);
      input.start_position = cached[s];
      input.block_table = &tables[s];
      input.logits = n == pending ? LogitsMode::kLast : LogitsMode::kNone;
      input.variant = options.per_sequence.empty() ? options.variant : options.per_sequence[s];
      batch.sequences.push_back(input);
      batch_seq.push_back(s);
    }
    if (batch.sequences.empty()) return generated;
    ARACH_RETURN_IF_ERROR(runner_.Execute(batch, output_));
    const ForwardOutput& out = output_;
    ++step;
    for (size_t i = 0; i < batch_seq.size(); ++i) {
      const size_t s = batch_seq[i];
      cached[s] += static_cast<int>(batch.sequences[i].tokens.size());
      if (out.num_rows(static_cast<int>(i)) == 0) continue;  // mid-prompt chunk
      const int32_t next = ArgMax(out.Row(static_cast<int>(i), 0));
      generated[s].push_back(next);
      tokens[s].push_back(next);
      const bool stop = std::find(options.stop_token_ids.begin(), options.stop_token_ids.end(), next) !=
                        options.stop_token_ids.end();
      if (stop || static_cast<int>(generated[s].size()) >= options.max_new_tokens ||
          static_cast<int>(tokens[s].size()) >= runner_.config().max_positions) {
        finished[s] = true;
      }
    }
    if (options.on_step) {
      std::vector<int> held(count);
      for (size_t s = 0; s < count; ++s) held[s] = static_cast<int>(tables[s].blocks().size());
      options.on_step(step, held);
    }
  }
}

}  // namespace arach
