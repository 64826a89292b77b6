// libFuzzer: arbitrary bytes as a tokenizer.json. Loading either fails with a status (malformed JSON, an
// unsupported component or option, a merge outside the vocabulary, a regex that does not compile) or gives
// a tokenizer that encodes and decodes a fixed text without crashing; never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/tokenizer/hf_tokenizer.h"
#include "tests/fuzz/fuzz_scratch_dir.h"

namespace {

std::string g_path;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_path = (arach::fuzz::ScratchDir("tokenizer-json") / "tokenizer.json").string();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(g_path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto tokenizer = arach::HfTokenizer::FromTokenizerJson(g_path);
  if (!tokenizer.ok()) return 0;
  for (const char* text : {"Hello world, 123! <s> caf\xc3\xa9 \xf0\x9f\xa4\x97", "", "   \n\t"}) {
    auto ids = (*tokenizer)->Encode(text, true);
    if (!ids.ok()) continue;
    for (int32_t id : *ids) {
      if (id < 0 || id >= (*tokenizer)->vocab_size()) std::abort();
    }
    (void)(*tokenizer)->Decode(*ids, false);
  }
  return 0;
}
