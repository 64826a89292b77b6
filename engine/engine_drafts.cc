// Speculative decoding in the engine: drafts appended before a step, verified after it (engine/spec proposes them).
#include <algorithm>

#include "engine/engine.h"
#include "engine/engine_request_state.h"
#include "engine/spec/draft_length.h"
#include "engine/spec/draft_proposer.h"
#include "engine/spec/ngram_index.h"

namespace arach {
namespace {

// A prediction is text to follow in order: one matching token re-aligns with it. Prompt lookup searches the whole
// sequence, where one token would match nearly everywhere: two at least.
constexpr NgramSizes kPredictionNgrams{1, 4};
constexpr NgramSizes kPromptLookupNgrams{2, 4};

// Whether `request` drafts from its prediction (else, where the engine does prompt lookup, from its sequence).
bool DraftsFromPrediction(const EngineRequest& request, const EngineConfig& config) {
  return !request.prediction.empty() && config.prediction_draft_tokens > 0;
}

}  // namespace

bool Engine::Speculates(const RequestState& r) const {
  if (r.request.kind != RequestKind::kGenerate) return false;
  return DraftsFromPrediction(r.request, config_) || config_.prompt_lookup_tokens > 0;
}

void Engine::ProposeDrafts() {
  // Running and waiting (about to join the step): vLLM counts the enqueued requests too.
  const int batch = static_cast<int>(scheduler_.running().size() + scheduler_.waiting().size());
  const bool disabled = config_.speculative_disable_by_batch_size > 0 && batch >= config_.speculative_disable_by_batch_size;
  for (Sequence* seq : scheduler_.running()) {
    seq->DropDrafts();  // left by a step that did not schedule them
    if (disabled) continue;
    RequestState& r = *requests_.at(seq->id);
    if (r.finished || !Speculates(r)) continue;
    // Decoding: the prompt computed, the last sampled token the only one to compute.
    if (seq->num_generated() < 1 || seq->num_uncomputed() != 1) continue;
    const bool from_prediction = DraftsFromPrediction(r.request, config_);
    // The step emits the drafts kept and one more token: within max_tokens and the context.
    const int room = std::min(r.request.sampling.max_tokens - seq->num_generated(), r.max_len - static_cast<int>(seq->tokens.size())) - 1;
    if (!r.drafter) {
      r.drafter.emplace(RequestState::Drafter{DraftLength(from_prediction ? config_.prediction_draft_tokens : config_.prompt_lookup_tokens),
                                              NgramIndex(from_prediction ? kPredictionNgrams : kPromptLookupNgrams)});
    }
    if (room <= 0) continue;
    const int wanted = std::min(room, r.drafter->length.Next());
    if (wanted <= 0) continue;
    // The output looked up in the prediction, or the sequence in itself (prompt lookup), through the request's index
    // of its source: the prediction indexed once, the sequence's new tokens each step.
    const std::span<const int32_t> tokens(seq->tokens);
    const std::span<const int32_t> source = from_prediction ? std::span<const int32_t>(r.request.prediction) : tokens;
    r.drafter->index.Extend(source);
    const std::span<const int32_t> recent = from_prediction ? tokens.subspan(static_cast<size_t>(seq->prompt_len)) : tokens;
    const DraftProposal proposal = r.drafter->index.Propose(recent, source, from_prediction ? r.prediction_cursor : 0, wanted);
    if (proposal.tokens.empty()) continue;
    seq->tokens.insert(seq->tokens.end(), proposal.tokens.begin(), proposal.tokens.end());
    seq->num_draft = static_cast<int>(proposal.tokens.size());
    r.draft_source_position = proposal.source_position;
  }
}

void Engine::VerifyDrafts(RequestState& r, const ForwardOutput& out, int index) {
  Sequence& seq = r.seq;
  const std::vector<int32_t> drafts(seq.tokens.end() - seq.num_draft, seq.tokens.end());
  const int num_drafts = seq.num_draft;
  seq.DropDrafts();
  // The forward wrote every draft's K/V; they count once the draft is kept (a rejected one is overwritten in place).
  seq.num_computed = seq.num_verified();
  // Counted before SampleAndEmit, which may finish the request (FinishInfo::usage, and a caller waiting on it, read
  // them); SampleAndEmit counts the kept ones.
  r.draft_tokens += num_drafts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.draft_tokens += num_drafts;
  }
  int accepted = 0;
  for (int row = 0; row <= num_drafts; ++row) {  // row i predicts the token after draft i - 1
    const size_t before = seq.tokens.size();
    const int32_t draft = row < num_drafts ? drafts[row] : -1;
    SampleAndEmit(r, out.Row(index, row), DevicePick{}, draft);
    const bool kept = draft >= 0 && seq.tokens.size() == before + 1 && seq.tokens.back() == draft;
    if (kept) ++accepted;
    if (!kept || r.finished) break;
    ++seq.num_computed;  // the kept draft's K/V are those of the token now at its position
  }
  r.drafter->length.Record(num_drafts, accepted);
  // Aligned, the token emitted after the kept drafts stands for the prediction's next one: the next match should end
  // just after it (in a repetitive text an earlier end would repeat a stretch out of step).
  if (!r.request.prediction.empty()) r.prediction_cursor = r.draft_source_position + accepted + 1;
}

}  // namespace arach
