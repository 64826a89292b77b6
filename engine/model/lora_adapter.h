// LoRA adapters in PEFT's format, served per request beside the base model (vLLM's --lora-modules): a folder
// with `adapter_config.json` and `adapter_model.safetensors`, whose tensors are
//   base_model.model.<module>.lora_A.weight  [r, in]
//   base_model.model.<module>.lora_B.weight  [out, r]
// for the model's attention and MLP projections (<module> in the checkpoint's own names: Llama's
// model.layers.{i}.self_attn.q_proj ... mlp.down_proj, GPT-2's [transformer.]h.{i}.attn.c_attn ... mlp.c_proj,
// GPT-NeoX's gpt_neox.layers.{i}.attention.query_key_value ... mlp.dense_4h_to_h). A projection W then computes
//   y = x W^T + scale * (x A^T) B^T,   scale = lora_alpha / r (use_rslora: lora_alpha / sqrt(r))
// for the rows of the requests that name the adapter; the base weights are never changed.
//
// The adapter is mapped here to the engine's fused projections (engine/model/model_weights.h): one (A, B) pair per
// layer and projection site, A the parts' A stacked ([sum of r, in]) and B each part's B placed in its rows and
// columns ([out, sum of r], zeros elsewhere: q/k/v into the fused QKV, gate/up into the fused MLP input, NeoX's
// head-interleaved rows regrouped), scale folded into B. Refused at load, each naming the file and field or tensor:
// another peft_type, DoRA, LoRA biases, modules_to_save, alpha_pattern, embeddings or the LM head as targets,
// tensors for modules or layers the model lacks, shapes that do not fit it.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace arach {

// The projections of a layer a LoRA adapter may change, in the engine's fused layout.
enum class LoraSite : int {
  kQkv,     // input [rows, d], output [rows, qkv_size]
  kOut,     // input [rows, q_size], output [rows, d]
  kMlpIn,   // input [rows, d], output [rows, I] or [rows, 2I] (gate; up)
  kMlpOut,  // input [rows, I], output [rows, d]
};
inline constexpr int kLoraSites = 4;

struct LoraProjection {
  HostTensor a;  // [R, in]: every targeted part's lora_A, stacked
  HostTensor b;  // [out, R]: each part's lora_B * scale in its rows and its columns of R, zeros elsewhere
  bool empty() const { return a.empty(); }
};

struct LoraLayer {
  std::array<LoraProjection, kLoraSites> sites;  // indexed by LoraSite; empty where the adapter leaves it
};

// What adapter_config.json says that the engine reads.
struct LoraConfig {
  int r = 0;
  double lora_alpha = 0;
  bool use_rslora = false;
};

// Parses adapter_config.json's text (`source` names it in errors). INVALID_ARGUMENT naming the field for a
// malformed value or an unsupported feature.
absl::StatusOr<LoraConfig> ParseLoraConfig(const std::string& text, const std::string& source);

struct LoraAdapter {
  std::string name;    // the name requests use (the model id)
  std::string source;  // the folder
  int max_rank = 0;    // the largest r of any module
  std::vector<std::string> modules;  // the model's modules it changes, as the checkpoint names them, sorted
  std::vector<LoraLayer> layers;     // [num_layers]
  size_t parameter_count() const;
};

// OK where `name` may name an adapter: non-empty, with no ':' (NAME:VARIANT names a variant) and no ',' (lists of
// adapters are comma-separated); else INVALID_ARGUMENT saying why (the caller names its flag or field).
absl::Status CheckLoraName(absl::string_view name);

// Loads the PEFT adapter folder `dir` for `config` under `name`.
absl::StatusOr<LoraAdapter> LoadLoraAdapter(const std::string& name, const std::string& dir, const ModelConfig& config);

// How many adapters a server holds and how large they may be (--max_loras, --max_cpu_loras, --max_lora_rank); 0: no
// bound. Where adapters may come or change while serving (loads, or swaps), device memory for max_loras of them at
// max_rank is kept before the KV pool is sized.
struct LoraLimits {
  int max_loras = 0;      // adapters on the device at once (so in one batch), those of start-up included
  // Adapters registered at once (vLLM's --max_cpu_loras; at most max_loras where 0 or less). Those beyond max_loras
  // wait in host memory and are swapped onto the device, in place of the one least recently used, when a request
  // needs them (the scheduler admits requests of at most max_loras adapters at a time).
  int max_cpu_loras = 0;
  int max_rank = 0;       // the largest r of any module of an adapter
  // Whether adapters are swapped between host and device (more may be registered than the device holds).
  bool swaps() const { return max_loras > 0 && max_cpu_loras > max_loras; }
  // The most adapters registered at once (0: no bound).
  int max_registered() const { return swaps() ? max_cpu_loras : max_loras; }
  // The flag that bounds the adapters registered, for messages.
  const char* registered_flag() const { return swaps() ? "--max_cpu_loras" : "--max_loras"; }
};

// OK where `adapter` is within `limits`' rank; else INVALID_ARGUMENT naming its folder, its rank and the flag.
absl::Status CheckLoraRank(const LoraAdapter& adapter, const LoraLimits& limits);

// The largest (A, B) pair of one layer and site an adapter of `config` whose modules have r <= `rank` holds: every
// module of the site adapted at r, A [rank, in] and B [out, rank] with rank = parts * r (q, k, v: 3 parts at the
// fused QKV), as LoadLoraAdapter lays them out.
struct LoraSiteShape {
  int64_t rank = 0;
  int64_t in = 0;
  int64_t out = 0;
};
std::array<LoraSiteShape, kLoraSites> LoraSiteShapesBound(const ModelConfig& config, int rank);

}  // namespace arach
