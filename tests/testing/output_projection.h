// Checks a model's last hidden state (an embedding request's FinishInfo::embedding, the row its LM head reads)
// against the references' logits: projected through the model's own output projection, read from the fixture's
// checkpoint in float32, it must give them. The embedding suites of the engine, the simulated CUDA backend and both
// APIs share it.
#pragma once

#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model/model_weights.h"

namespace arach::testing {

class OutputProjection {
 public:
  // The output projection ([V, d]: the LM head, or the token embeddings where they are tied) of fixture `model`.
  static absl::StatusOr<OutputProjection> Load(const std::string& model);

  int64_t hidden_size() const { return weights_.output_projection().cols(); }
  // max over the vocabulary of |W . hidden - ref|, ref the reference tensor `ref_name` (RefTensor); an error when
  // the sizes differ.
  absl::StatusOr<float> MaxLogitError(std::span<const float> hidden, const std::string& ref_name) const;

 private:
  explicit OutputProjection(ModelWeights weights) : weights_(std::move(weights)) {}
  ModelWeights weights_;
};

}  // namespace arach::testing
