// The architecture description the engine needs, parsed from a Hugging Face `config.json`.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/core/activation.h"
#include "engine/model/weight_quantization.h"

namespace arach {

// The checkpoint family (config.json `model_type`). Llama, Mistral, Qwen2 and Qwen3 share the Llama tensor
// layout and differ in features the config spells out (biases, q/k norms, head_dim, sliding windows).
enum class Architecture { kGpt2, kGptNeox, kLlama, kMistral, kQwen2, kQwen3 };
enum class NormKind { kLayerNorm, kRmsNorm };

absl::string_view ArchitectureName(Architecture arch);  // the model_type: "gpt2", "gpt_neox", "llama", "mistral", "qwen2", "qwen3"

// How RoPE frequencies are rescaled for long contexts (config `rope_type`).
enum class RopeScaling {
  kNone,    // "default"
  kLinear,  // "linear": positions / factor
  kLlama3,  // "llama3": low frequencies / factor, a smooth band, high frequencies unchanged
};

// Rotary position embedding settings (rotate-half convention, as HF GPT-NeoX and Llama use).
struct RopeConfig {
  int rotary_dim = 0;      // leading dims of each head that rotate (even; head_dim for Llama)
  double theta = 10000.0;  // base of the inverse frequencies
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;                     // linear and llama3
  double low_freq_factor = 1.0;            // llama3
  double high_freq_factor = 4.0;           // llama3
  int original_max_position_embeddings = 8192;  // llama3

  // The rotary_dim / 2 inverse frequencies, after any scaling.
  std::vector<float> InverseFrequencies() const;
  // The rotation of every position in [0, positions): [positions, rotary_dim] float32, row p = cos(p * f_i) for the
  // rotary_dim / 2 inverse frequencies f_i, then sin(p * f_i) (the angle p * f_i rounded to float32 first, as
  // torch computes it). The table Backend::Rope reads (FlashInfer's cos/sin cache layout).
  std::vector<float> CosSinTable(int positions) const;
};

struct ModelConfig {
  Architecture arch = Architecture::kGpt2;
  int hidden_size = 0;         // d
  int num_layers = 0;
  int num_heads = 0;           // query heads
  int num_kv_heads = 0;        // key/value heads (GQA when < num_heads)
  int head_dim = 0;
  int intermediate_size = 0;   // MLP inner width
  int vocab_size = 0;
  int max_positions = 0;       // context length
  float norm_eps = 1e-5f;
  NormKind norm = NormKind::kLayerNorm;
  Activation activation = Activation::kGeluTanh;
  bool gated_mlp = false;          // Llama: down(act(gate(x)) * up(x))
  bool parallel_residual = false;  // GPT-NeoX: x + attn(ln1(x)) + mlp(ln2(x))
  bool learned_positions = false;  // GPT-2: wpe added to the token embedding
  bool use_rope = false;
  RopeConfig rope;
  bool qkv_bias = false;        // biases on the Q/K/V projection
  bool qk_norm = false;         // Qwen3: RMSNorm of each query / key head (weights [head_dim]) before RoPE
  // Per layer: how many positions a query sees (the last `window`, itself included); 0 = all. Empty = all
  // layers see everything. Mistral windows every layer; Qwen2/Qwen3 with use_sliding_window window the
  // layers from max_window_layers on (or as `layer_types` says).
  std::vector<int> layer_sliding_window;
  bool attn_out_bias = false;   // bias on the attention output projection
  bool mlp_bias = false;        // biases on the MLP projections
  bool tie_word_embeddings = false;
  bool scale_attn_weights = true;              // GPT-2: divide logits by sqrt(head_dim)
  bool scale_attn_by_inverse_layer_idx = false;  // GPT-2: also divide by layer index + 1
  int bos_token_id = -1;                 // -1: none
  std::vector<int> eos_token_ids;        // may be empty
  WeightQuantization quantization;       // config.json "quantization_config" (FP8 checkpoints); none by default

  int q_size() const { return num_heads * head_dim; }
  // The sliding window of layer `layer` (0 = none).
  int SlidingWindow(int layer) const { return layer_sliding_window.empty() ? 0 : layer_sliding_window[layer]; }
  // The window every layer shares, when all have one (K/V before it are never read again); else 0.
  int UniformSlidingWindow() const;
  int kv_size() const { return num_kv_heads * head_dim; }
  int qkv_size() const { return q_size() + 2 * kv_size(); }
  // Softmax scale of layer `layer`'s attention logits.
  float AttentionScale(int layer) const;
};

// Parses config.json text. `source` names the file in errors; every error names the field.
absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source);
// Adds generation_config.json's end-of-sequence ids (an integer or a list: Llama 3 and Qwen stop at several)
// to config.eos_token_ids. Errors name the file and the field.
absl::Status MergeGenerationConfig(const std::string& json_text, const std::string& source, ModelConfig& config);
// Reads and parses `<dir>/config.json`, and `<dir>/generation_config.json` when present.
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& model_dir);

}  // namespace arach
