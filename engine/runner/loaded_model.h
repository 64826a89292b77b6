// Everything needed to run a model folder: its config, tokenizer and a ModelRunner on a device.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/model/model_config.h"
#include "engine/runner/model_runner.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

struct LoadModelOptions {
  DeviceKind device = DeviceKind::kCpu;
  int block_size = 16;          // tokens per KV block
  size_t kv_cache_bytes = 0;    // KV pool size; 0 = room for `default_kv_sequences` full-context sequences
  int default_kv_sequences = 4;
};

struct LoadedModel {
  std::string dir;
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ModelRunner> runner;
};

// Loads config.json, the tokenizer and the weights of `dir` and builds the runner.
absl::StatusOr<LoadedModel> LoadModel(const std::string& dir, const LoadModelOptions& options);

// KV blocks that fit in `bytes` for `config` (at least one).
int KvBlocksForBytes(const ModelConfig& config, int block_size, DType dtype, size_t bytes);

}  // namespace arach
