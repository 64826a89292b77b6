#include "tests/testing/output_projection.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"
#include "tests/testing/fixtures.h"

namespace arach::testing {

absl::StatusOr<OutputProjection> OutputProjection::Load(const std::string& model) {
  ARACH_ASSIGN_OR_RETURN(const ModelConfig config, LoadModelConfig(FixturePath(model)));
  ARACH_ASSIGN_OR_RETURN(const std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(FixturePath(model)));
  ARACH_ASSIGN_OR_RETURN(ModelWeights weights, LoadModelWeights(*checkpoint, config));
  return OutputProjection(std::move(weights));
}

absl::StatusOr<float> OutputProjection::MaxLogitError(std::span<const float> hidden, const std::string& ref_name) const {
  const HostTensor& w = weights_.output_projection();  // [V, d]
  const std::vector<float> ref = RefTensor(ref_name);   // [V]
  if (static_cast<int64_t>(hidden.size()) != w.cols() || static_cast<int64_t>(ref.size()) != w.rows()) {
    return absl::InvalidArgumentError(absl::StrCat("a hidden state of ", hidden.size(), " values and ", ref.size(), " reference logits for a [",
                                                   w.rows(), ", ", w.cols(), "] projection"));
  }
  float worst = 0;
  for (int64_t v = 0; v < w.rows(); ++v) {
    double logit = 0;
    for (int64_t k = 0; k < w.cols(); ++k) logit += static_cast<double>(w.data[v * w.cols() + k]) * hidden[k];
    worst = std::max(worst, std::abs(static_cast<float>(logit) - ref[v]));
  }
  return worst;
}

}  // namespace arach::testing
