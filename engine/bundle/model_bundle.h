// A model bundle: everything needed to serve a model folder, loaded together: its config, tokenizer and
// chat template, and a ModelRunner on a device holding the weights with the variant features (the ARACH
// hub embedding, the pre-projection + skip adapter) and the KV pool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/chat/chat_template.h"
#include "engine/model/embedding_config.h"
#include "engine/model/model_config.h"
#include "engine/runner/device_weights.h"
#include "engine/runner/model_runner.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach {

// The most tokens per sequence the default KV pool makes room for.
inline constexpr int kDefaultKvTokensPerSequence = 8192;

// A LoRA adapter to serve: the name requests give it by, and its PEFT folder (engine/model/lora_adapter.h).
struct LoraModule {
  std::string name;
  std::string path;
};

struct LoadModelOptions {
  DeviceKind device = DeviceKind::kCpu;
  int block_size = 16;          // tokens per KV block
  int kv_blocks = 0;            // KV pool size in blocks (wins over the byte budget when set)
  size_t kv_cache_bytes = 0;    // KV pool size in bytes
  double kv_memory_fraction = 0;  // else: this fraction of the device memory free after the weights
  // else: room for this many sequences of the model's context (at most kDefaultKvTokensPerSequence each)
  int default_kv_sequences = 4;
  std::string hub_embedding;    // "FILE.safetensors:KEY"; empty = derived from the embeddings (seed below)
  bool step_graphs = true;      // record decode steps as graphs where the device can (ModelRunner::set_step_graphs)
  uint64_t hub_seed = 0;        // seed of the derived hub embedding (kDefaultHubSeed)
  std::string adapter;          // pre-projection + skip adapter (safetensors); empty = none
  std::vector<LoraModule> lora_modules;  // LoRA adapters requests may name, loaded beside the base model
  LoraLimits lora_limits;       // how many adapters at once and their largest rank (0: no bound)
  // Adapters will be loaded while serving (Engine::LoadLora). Then, and where adapters are swapped
  // (LoraLimits::swaps), the KV pool leaves memory for lora_limits.max_loras adapters of rank lora_limits.max_rank
  // (both must then be set), less what the start-up adapters on the device take.
  bool lora_runtime_loading = false;
  std::string chat_template;    // a Jinja file that replaces the model's chat template; empty = the model's own
  // The model as a cross-encoder (vLLM's classifier_from_token): one or two tokens of its vocabulary whose logits at
  // a pair's last position score it (ModelBundle::classifier_token_ids); empty: none.
  std::vector<std::string> classifier_from_token;
  // The context served (positions a sequence may reach: prompt and generated tokens), below the model's own
  // max_position_embeddings; 0 = the model's. The RoPE table and the default KV pool follow it.
  int max_model_len = 0;
  int cpu_threads = 0;          // CPU backend threads; 0 = decided (cpu_threads.h)
  // CPU weight matrices: f32 (the library's default: results equal the float32 references), f16, bf16, or auto
  // (f16 where the CPU has F16C; the binaries' default).
  WeightDTypeChoice weight_dtype = WeightDTypeChoice::kF32;
  KvDTypeChoice kv_cache_dtype = KvDTypeChoice::kAuto;  // auto: float32 beside float32 weights, f16 beside narrower ones
};

// The command-line spellings of the storage dtypes (--weight_dtype, --kv_cache_dtype), resolved into `load`; an
// unknown value is INVALID_ARGUMENT naming the flag. Shared by arach-server, arach-run and the benchmarks.
// The help of --weight_dtype and --kv_cache_dtype, for every executable that takes them.
inline constexpr char kWeightDTypeFlagHelp[] =
    "weight matrices: f32, f16 or bf16 (half the bytes; float32 arithmetic; f16 is the more precise), int8 (CPU: a "
    "quarter of the bytes, one scale per output row) or auto (CPU: f16 where the CPU converts halves in hardware, else "
    "f32; GPU: the one 16-bit type it computes in, bf16 for bf16 and FP8 checkpoints, f16 for f16 and f32 ones)";
inline constexpr char kKvCacheDTypeFlagHelp[] =
    "KV cache: f32, f16 or bf16 (half the bytes per cached token, so twice the tokens fit; f16 is the more precise) "
    "or auto (CPU: f16 with weights narrower than f32, f32 with f32 weights; GPU: its compute type)";

absl::Status ParseStorageDTypeFlags(absl::string_view weight_dtype, absl::string_view kv_cache_dtype, LoadModelOptions& load);

// The help of --max_loras, --max_cpu_loras and --max_lora_rank.
inline constexpr char kMaxLorasFlagHelp[] =
    "the most LoRA adapters on the device at once, so in one batch, those of --lora_modules included (with "
    "--allow_runtime_lora_updating or --max_cpu_loras, memory for them is kept from the KV cache at start-up)";
inline constexpr char kMaxCpuLorasFlagHelp[] =
    "the most LoRA adapters registered at once (start-up and loaded ones; a load beyond it is refused); 0: "
    "--max_loras. Above --max_loras, adapters wait in host memory and are swapped onto the device, in place of the "
    "least recently used, when a request needs them; requests of at most --max_loras adapters run at a time (the "
    "others wait their turn in arrival order)";
inline constexpr char kMaxLoraRankFlagHelp[] =
    "the largest LoRA rank (r of any module) an adapter may have; one above it is refused when it loads";
// The help of --lora_modules, for every executable that takes it.
inline constexpr char kLoraModulesFlagHelp[] =
    "LoRA adapters to serve beside the model, NAME=PATH[,NAME=PATH...]: PEFT folders (adapter_config.json and "
    "adapter_model.safetensors); a request names one as its model (NAME, or NAME:VARIANT with an ARACH variant)";
// The --lora_modules entries ("NAME=PATH") into `load`: INVALID_ARGUMENT naming the flag for an entry without
// "=", an empty name or path, a name with ':' or ',' or one given twice.
absl::Status ParseLoraModulesFlag(const std::vector<std::string>& entries, LoadModelOptions& load);
// OK where `load`'s lora_modules are within its lora_limits (LoraLimits::max_registered); else INVALID_ARGUMENT
// naming --lora_modules and the bounding flag. LoadFeatureWeights checks it; a server checks before loading anything.
absl::Status CheckLoraModuleCount(const LoadModelOptions& load);

struct ModelBundle {
  std::string dir;
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat_template;  // null: the model has none (chat requests are refused)
  EmbeddingConfig embedding_config;                 // how embedding requests pool the prompt's hidden states
  std::unique_ptr<ModelRunner> runner;
  LoraLimits lora_limits;  // LoadModelOptions::lora_limits, which Engine::LoadLora keeps to
  // The --lora_modules adapters, in order. The runner holds the first lora_limits.max_loras of them (all where
  // adapters are not swapped); `host` keeps each one's weights on the host where they are (LoraLimits::swaps), else null.
  struct StartupLora {
    std::string name;
    std::shared_ptr<const LoraAdapter> host;
  };
  std::vector<StartupLora> startup_loras;
  // LoadModelOptions::classifier_from_token's ids (ResolveClassifierTokens); empty: not a cross-encoder.
  std::vector<int32_t> classifier_token_ids;
};

// The help of --classifier_from_token.
inline constexpr char kClassifierFromTokenFlagHelp[] =
    "serve the model as a cross-encoder (vLLM's classifier_from_token, e.g. no,yes for Qwen3-Reranker): /v1/rerank and "
    "/v1/score then score each pair (query or text_1, then the document or text_2, their tokens one after the other) by "
    "the logits of these tokens at its last position: two tokens, sigmoid(logit[2nd] - logit[1st]); one, "
    "sigmoid(logit); each must be one token of the vocabulary. Empty: they compare embeddings";
// The ids of `tokens` (1 or 2 tokens of the vocabulary) for a cross-encoder; INVALID_ARGUMENT naming
// --classifier_from_token for another count, a token the vocabulary lacks, or a tokenizer that adds special tokens
// to a sequence (a pair is encoded as its two texts' tokens one after the other, which such a tokenizer's pair
// template may not be).
absl::StatusOr<std::vector<int32_t>> ResolveClassifierTokens(const Tokenizer& tokenizer, const std::vector<std::string>& tokens);

// Loads config.json, the tokenizer and its chat template, the embedding pooling (modules.json), the weights and
// the variant features of `dir` and builds the runner.
absl::StatusOr<ModelBundle> LoadModelBundle(const std::string& dir, const LoadModelOptions& options);

// The hub embedding (given or derived) and the adapter (when asked for) of `options`.
absl::StatusOr<FeatureWeights> LoadFeatureWeights(const ModelConfig& config, const ModelWeights& weights,
                                                 const LoadModelOptions& options);

// KV blocks that fit in `bytes` for `config` (at least one).
int KvBlocksForBytes(const ModelConfig& config, int block_size, DType dtype, size_t bytes);

}  // namespace arach
