// A small, valid byte-level BPE vocabulary of any size for random-weight models (make-model):
// the 256 byte symbols, deterministic merges that build word-like tokens, and "<|endoftext|>" as the
// last id. Written as vocab.json + merges.txt, so the regular loader reads it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace arach {

// Writes `dir`/vocab.json and `dir`/merges.txt with exactly `vocab_size` (>= 258) tokens.
absl::Status WriteSyntheticTokenizer(const std::string& dir, int vocab_size, uint64_t seed);

}  // namespace arach
