// libFuzzer: a model folder's Sentence-Transformers files (modules.json, then the Pooling module's config.json,
// split at the first NUL byte) are read into a pooling mode or refused with INVALID_ARGUMENT / NOT_FOUND naming a
// file, for any bytes: no crash, no other outcome.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model/embedding_pooling.h"

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
  const size_t split = input.find('\0');
  std::ofstream(Folder() / "modules.json", std::ios::trunc) << input.substr(0, split);
  std::ofstream(Folder() / "1_Pooling" / "config.json", std::ios::trunc)
      << (split == std::string::npos ? std::string() : input.substr(split + 1));
  const absl::StatusOr<arach::EmbeddingPooling> pooling = arach::LoadEmbeddingPooling(Folder().string(), kHiddenSize);
  if (pooling.ok()) {
    const arach::PoolingMode mode = pooling->mode;
    if (mode != arach::PoolingMode::kLastToken && mode != arach::PoolingMode::kMean && mode != arach::PoolingMode::kFirstToken) std::abort();
    return 0;
  }
  const absl::StatusCode code = pooling.status().code();
  if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kNotFound) std::abort();
  return 0;
}
