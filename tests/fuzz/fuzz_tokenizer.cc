// libFuzzer: tokenizers encode arbitrary bytes (malformed UTF-8 is an error, not a crash) and decode
// arbitrary ids; valid text round-trips exactly through the synthetic byte-level BPE (no normalizer).
// With ARACH_FUZZ_TOKENIZER_DIR set, that tokenizer (e.g. a fixture's) is fuzzed instead.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tools/make_model/synthetic_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_scratch_dir.h"

namespace {

std::unique_ptr<arach::Tokenizer> g_tokenizer;
bool g_exact_round_trip = true;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string dir;
  if (const char* given = std::getenv("ARACH_FUZZ_TOKENIZER_DIR"); given != nullptr) {
    dir = given;
    g_exact_round_trip = false;  // real tokenizers may normalise (NFC)
  } else {
    dir = arach::fuzz::ScratchDir("tokenizer").string();
    if (!arach::WriteSyntheticTokenizer(dir, 2000, 1).ok()) std::abort();
  }
  auto tokenizer = arach::LoadTokenizer(dir);
  if (!tokenizer.ok()) std::abort();
  g_tokenizer = std::move(*tokenizer);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto ids = g_tokenizer->Encode(text, false);
  if (ids.ok()) {
    for (int32_t id : *ids) {
      if (id < 0 || id >= g_tokenizer->vocab_size()) std::abort();
    }
    auto back = g_tokenizer->Decode(*ids, false);
    if (!back.ok()) std::abort();
    if (g_exact_round_trip && *back != text) std::abort();
  }
  // The same bytes read as token ids (some out of range) decode or fail cleanly.
  std::vector<int32_t> raw(size / 2);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<int16_t>(data[2 * i] | (data[2 * i + 1] << 8));
  (void)g_tokenizer->Decode(raw, false);
  return 0;
}
