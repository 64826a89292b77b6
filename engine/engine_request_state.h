// The engine's own record of a request on the step thread (engine.cc, engine_drafts.cc): the request, its
// sequence, its output state and what FinishInfo will report. Not part of the engine's interface.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "engine/embedding_pooler.h"
#include "engine/engine.h"
#include "engine/output/detokenizer.h"
#include "engine/sampling/token_filter.h"
#include "engine/spec/draft_length.h"
#include "engine/spec/ngram_index.h"

namespace arach {

struct Engine::RequestState {
  RequestState(uint64_t id_in, EngineRequest request_in, std::shared_ptr<RequestObserver> observer_in, const Tokenizer& tokenizer,
               int block_size)
      : id(id_in),
        request(std::move(request_in)),
        observer(std::move(observer_in)),
        seq(block_size),
        detokenizer(tokenizer, request.sampling.stop, request.prompt, request.sampling.skip_special_tokens,
                    request.sampling.include_stop_str_in_output) {}

  uint64_t id;
  EngineRequest request;
  std::shared_ptr<RequestObserver> observer;
  Sequence seq;
  IncrementalDetokenizer detokenizer;
  uint64_t seed = 0;
  std::vector<int32_t> stop_ids;     // ids that end generation (EOS unless ignored, stop_token_ids)
  std::optional<int32_t> stop_token_id;  // the request's stop_token_ids entry that ended it (FinishInfo)
  int max_len = 0;                   // prompt + max_tokens, capped by the context
  bool queued = true;                // counted in Engine::queued_
  bool finished = false;
  Clock::time_point arrival, first_scheduled, first_token, last_token;
  bool started = false;
  std::vector<float> prompt_logprobs;
  std::vector<bool> prompt_is_greedy;
  std::vector<int32_t> prompt_argmax;
  std::vector<int32_t> prompt_ranks;
  std::vector<std::vector<TokenLogprob>> prompt_top_logprobs;
  std::optional<EmbeddingPooler> embedding_pooler;  // kEmbed: pools the prompt's hidden states as they are computed
  std::vector<float> embedding;             // kEmbed: the pooled embedding, once the prompt is computed
  std::vector<float> class_logits;          // kClassify: the class tokens' logits, once the prompt is computed
  std::optional<KeptGeneration> generated;  // when the request keeps it
  double generated_logprob_sum = 0.0;
  int generated_logprobs = 0;
  std::optional<AttentionDiagnosticsAccumulator> diagnostics;  // when the request asked for diagnostics
  std::optional<ConstraintMatcher> constraint;  // structured output: where the output stands in its constraint
  TokenFilter token_filter;                     // allowed_token_ids and bad_words (inactive without them)
  // Speculative decoding (engine_drafts.cc): the prediction's index just after the token the last step emitted, as
  // aligned (the next lookup prefers a match ending there), the index of the pending drafts' first token, and the
  // request's counts.
  int prediction_cursor = 0;
  // Set at the first step that may draft: how many drafts the next step checks, and the index of the draft source
  // (the prediction or the sequence).
  struct Drafter {
    DraftLength length;
    NgramIndex index;
  };
  std::optional<Drafter> drafter;
  int draft_source_position = 0;
  int draft_tokens = 0;
  int accepted_draft_tokens = 0;

  // The score of the prompt row at `position` against the prompt token after it.
  void RecordPromptScore(int position, const RowScore& score) {
    prompt_logprobs[position] = score.logprob;
    prompt_argmax[position] = score.argmax;
    prompt_is_greedy[position] = score.argmax == seq.tokens[position + 1];
    prompt_ranks[position] = score.rank;
  }
};

}  // namespace arach
