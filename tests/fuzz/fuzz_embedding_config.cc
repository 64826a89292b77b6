// libFuzzer: a model folder's Sentence-Transformers files (modules.json, the Pooling module's config.json and the
// Transformer module's sentence_bert_config.json, split at the first and second NUL bytes) are read into an
// embedding config or refused with INVALID_ARGUMENT / NOT_FOUND naming a file, for any bytes: no crash, no other
// outcome.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model/embedding_config.h"

namespace {

constexpr int kHiddenSize = 64;

// A folder of this process's own, made once.
const std::filesystem::path& Folder() {
  static const std::filesystem::path folder = [] {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("arach_fuzz_pooling_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path / "1_Pooling");
    return path;
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t first_split = input.find('\0');
  const size_t second_split = first_split == std::string::npos ? std::string::npos : input.find('\0', first_split + 1);
  const auto part = [&](size_t begin, size_t end) {
    return begin == std::string::npos || begin >= input.size() ? std::string() : input.substr(begin, end == std::string::npos ? end : end - begin);
  };
  std::ofstream(Folder() / "modules.json", std::ios::trunc) << input.substr(0, first_split);
  std::ofstream(Folder() / "1_Pooling" / "config.json", std::ios::trunc)
      << part(first_split == std::string::npos ? first_split : first_split + 1, second_split);
  const std::filesystem::path transformer_config = Folder() / "sentence_bert_config.json";
  if (second_split == std::string::npos) {
    std::filesystem::remove(transformer_config);
  } else {
    std::ofstream(transformer_config, std::ios::trunc) << part(second_split + 1, std::string::npos);
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
