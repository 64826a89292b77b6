#include "engine/model/hub_embedding.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/core/random.h"
#include "engine/core/status.h"
#include "engine/model/checkpoint.h"

namespace arach {

std::vector<float> DefaultHubEmbedding(const HostTensor& token_embedding, uint64_t seed) {
  const int64_t vocab = token_embedding.rows(), d = token_embedding.cols();
  std::vector<double> mean(d, 0.0), sq(d, 0.0);
  for (int64_t v = 0; v < vocab; ++v) {
    const float* row = token_embedding.data.data() + v * d;
    for (int64_t c = 0; c < d; ++c) mean[c] += row[c];
  }
  for (int64_t c = 0; c < d; ++c) mean[c] /= static_cast<double>(vocab);
  for (int64_t v = 0; v < vocab; ++v) {
    const float* row = token_embedding.data.data() + v * d;
    for (int64_t c = 0; c < d; ++c) sq[c] += (row[c] - mean[c]) * (row[c] - mean[c]);
  }
  NormalSampler z(seed);
  std::vector<float> hub(d);
  for (int64_t c = 0; c < d; ++c) {
    const double std_dev = std::sqrt(sq[c] / static_cast<double>(std::max<int64_t>(1, vocab - 1)));
    hub[c] = static_cast<float>(mean[c] + std_dev * z.Next());
  }
  return hub;
}

absl::StatusOr<std::vector<float>> LoadHubEmbedding(const std::string& spec, int hidden_size) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat("hub embedding \"", spec, "\" must be FILE.safetensors:KEY"));
  }
  const std::string path = spec.substr(0, colon), key = spec.substr(colon + 1);
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file, Checkpoint::OpenFile(path));
  ARACH_ASSIGN_OR_RETURN(const TensorInfo* info, file->Find(key));
  const bool fits = (info->shape.size() == 1 && info->shape[0] == hidden_size) ||
                    (info->shape.size() == 2 && info->shape[0] == 1 && info->shape[1] == hidden_size);
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": tensor \"", key, "\" has shape ", info->ShapeString(),
                                                   ", a hub embedding must be [", hidden_size, "]"));
  }
  return file->ReadFloat(key);
}

}  // namespace arach
