// The ARACH hub embedding: one vector [d] fed at every hub position (there is no hub token id).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/model_weights.h"

namespace arach {

// The seed of the default hub embedding (documented; changing it changes every ARACH output).
inline constexpr uint64_t kDefaultHubSeed = 0;

// mean(E, axis 0) + std(E, axis 0) * z with E the input embedding [V, d], std the unbiased (n - 1)
// per-dimension standard deviation, and z ~ N(0, 1) from NormalSampler(seed): the rule the method's
// reference uses, with our own generator.
std::vector<float> DefaultHubEmbedding(const HostTensor& token_embedding, uint64_t seed = kDefaultHubSeed);

// Loads "FILE.safetensors:KEY" (a [d] or [1, d] tensor). Errors name the file, the key and the shapes.
absl::StatusOr<std::vector<float>> LoadHubEmbedding(const std::string& spec, int hidden_size);

}  // namespace arach
