// libFuzzer: a model folder's Sentence-Transformers files (modules.json, the Pooling module's config.json, the
// Transformer module's sentence_bert_config.json and config_sentence_transformers.json, the input's parts between
// NUL bytes) are read into an embedding config or refused with INVALID_ARGUMENT / NOT_FOUND naming a file, for any bytes: no crash, no other
// outcome.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/model/embedding_config.h"
#include "tests/fuzz/fuzz_scratch_dir.h"

namespace {

constexpr int kHiddenSize = 64;

// The model folder, with its Pooling module's subfolder.
const std::filesystem::path& Folder() {
  static const std::filesystem::path& folder = []() -> const std::filesystem::path& {
    const std::filesystem::path& path = arach::fuzz::ScratchDir("pooling");
    std::filesystem::create_directories(path / "1_Pooling");
    return path;
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  const std::string input(reinterpret_cast<const char*>(data), size);
  // modules.json is always written; each further file exists only where its NUL-separated part does.
  const char* const files[] = {"modules.json", "1_Pooling/config.json", "sentence_bert_config.json", "config_sentence_transformers.json"};
  size_t begin = 0;
  for (size_t i = 0; i < std::size(files); ++i) {
    const std::filesystem::path path = Folder() / files[i];
    if (begin > input.size()) {
      std::filesystem::remove(path);
      continue;
    }
    const size_t end = std::min(input.find('\0', begin), input.size());
    std::ofstream(path, std::ios::trunc) << input.substr(begin, end - begin);
    begin = end + 1;
  }
  const absl::StatusOr<arach::EmbeddingConfig> pooling = arach::LoadEmbeddingConfig(Folder().string(), kHiddenSize);
  if (pooling.ok()) {
    const arach::PoolingMode mode = pooling->pooling;
    if (mode != arach::PoolingMode::kLastToken && mode != arach::PoolingMode::kMean && mode != arach::PoolingMode::kFirstToken) std::abort();
    if (pooling->max_tokens && *pooling->max_tokens < 1) std::abort();
    return 0;
  }
  const absl::StatusCode code = pooling.status().code();
  if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kNotFound) std::abort();
  return 0;
}
