// Deterministic pseudo-random numbers that do not depend on the standard library's distributions
// (whose output differs between implementations): splitmix64 and Box-Muller normals.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/core/host_device.h"  // the sampler's draw is shared with the GPU's kernels

namespace arach {

// The splitmix64 finaliser: a fast, well-mixing bijection on 64-bit values (hashing, counter-based draws).
ARACH_HOST_DEVICE inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A uniform value in [0, 1) determined by (seed, counter): the sampler's draw for token `counter` of a request
// seeded `seed`, on the CPU (engine/sampling/sampler.cc) and on the GPU (engine/backend/cuda/cuda_sampling.cu).
ARACH_HOST_DEVICE inline double CounterUniform(uint64_t seed, uint64_t counter) {
  const uint64_t bits = Mix64(Mix64(seed + 0x9e3779b97f4a7c15ull) ^ (counter * 0xd1b54a32d192ed03ull + 1));
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

class NormalSampler {
 public:
  explicit NormalSampler(uint64_t seed) : state_(seed) {}

  // The next N(0, 1) sample.
  float Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    constexpr double kTwoPi = 6.283185307179586;
    const double u1 = (static_cast<double>(NextU64() >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
    const double u2 = static_cast<double>(NextU64() >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(kTwoPi * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(kTwoPi * u2));
  }

  uint64_t NextU64() { return Mix64(state_ += 0x9e3779b97f4a7c15ull); }

 private:
  uint64_t state_;
  float spare_ = 0.0f;
  bool has_spare_ = false;
};

}  // namespace arach
