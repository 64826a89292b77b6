// What both APIs' similarity routes share (HTTP /v1/rerank and /v1/score, gRPC Rerank): a pair's score, from its two
// texts' embeddings or, on a cross-encoder (--classifier_from_token: Engine::classifier_token_ids), from the class
// tokens' logits of the pair classified as one request; and the ranking of documents by their scores.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/request_limits.h"

namespace arach::server {

// A text of a similarity call and the parameter it came from ("query", "documents[2]", "text_1").
struct NamedText {
  std::string text;
  std::string field;
};

// A cross-encoder's request for the pair (first, second): their tokens one after the other (as Hugging Face encodes a
// pair for a tokenizer that adds no special tokens, which --classifier_from_token requires), classified by the
// engine's classifier tokens, vLLM's truncate_prompt_tokens applied to the whole. Errors name the text's field.
absl::StatusOr<EngineRequest> PairEngineRequest(const Engine& engine, const RequestLimits& limits, const NamedText& first,
                                                const NamedText& second, std::optional<int> truncate_prompt_tokens,
                                                const Variant& variant);

// The class probabilities of a classifier's class-token logits: their softmax (accumulated in double), or for one
// class its sigmoid.
std::vector<double> ClassProbabilities(std::span<const float> class_logits);

// A cross-encoder's score of a pair from its class tokens' logits: the last class's probability (ClassProbabilities):
// two, sigmoid(logit[1] - logit[0]) (the second token's probability between the two); one, sigmoid(logit[0]).
double ClassifierScore(std::span<const float> class_logits);

// The cosine similarity of two embeddings of one length (0 where either is all zeros), accumulated in double.
double CosineSimilarity(std::span<const float> a, std::span<const float> b);

// The indices of `scores`, best first (ties in index order), the first `top_n` of them (absent or 0 or less: all).
std::vector<size_t> RankBestFirst(const std::vector<double>& scores, std::optional<int> top_n);

}  // namespace arach::server
