#include "engine/model/lora_adapter.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/field_error.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/model/checkpoint.h"
#include "engine/model/json_object.h"
#include "engine/model/weight_reader.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

constexpr char kConfigFile[] = "adapter_config.json";
constexpr char kWeightsFile[] = "adapter_model.safetensors";
constexpr char kNamePrefix[] = "base_model.model.";

// Where one checkpoint module's output lands in the engine's fused projections.
struct ModulePart {
  int layer = 0;
  LoraSite site = LoraSite::kQkv;
  int64_t row_offset = 0;  // first output row of the site it fills
  int64_t rows = 0;        // output rows it fills
  int64_t in = 0;          // input width
  bool neox_interleaved = false;  // GPT-NeoX's head-interleaved QKV rows (regrouped like the base weight)
};

struct SitePart {
  const char* suffix;  // the module's name after the layer prefix
  LoraSite site;
  int part;            // 0: the whole site; q/k/v or gate/up: 1, 2, 3
};

// The layer prefixes and per-layer projections of each family, as its checkpoints name them.
std::vector<std::string> LayerPrefixes(Architecture arch) {
  switch (arch) {
    case Architecture::kGpt2: return {"transformer.h.", "h."};
    case Architecture::kGptNeox: return {"gpt_neox.layers."};
    case Architecture::kLlama:
    case Architecture::kMistral:
    case Architecture::kQwen2:
    case Architecture::kQwen3: return {"model.layers."};
  }
  return {};
}

std::vector<SitePart> LayerProjections(Architecture arch) {
  switch (arch) {
    case Architecture::kGpt2:
      return {{"attn.c_attn", LoraSite::kQkv, 0}, {"attn.c_proj", LoraSite::kOut, 0},
              {"mlp.c_fc", LoraSite::kMlpIn, 0}, {"mlp.c_proj", LoraSite::kMlpOut, 0}};
    case Architecture::kGptNeox:
      return {{"attention.query_key_value", LoraSite::kQkv, 0}, {"attention.dense", LoraSite::kOut, 0},
              {"mlp.dense_h_to_4h", LoraSite::kMlpIn, 0}, {"mlp.dense_4h_to_h", LoraSite::kMlpOut, 0}};
    case Architecture::kLlama:
    case Architecture::kMistral:
    case Architecture::kQwen2:
    case Architecture::kQwen3:
      return {{"self_attn.q_proj", LoraSite::kQkv, 1},   {"self_attn.k_proj", LoraSite::kQkv, 2},
              {"self_attn.v_proj", LoraSite::kQkv, 3},   {"self_attn.o_proj", LoraSite::kOut, 0},
              {"mlp.gate_proj", LoraSite::kMlpIn, 1},    {"mlp.up_proj", LoraSite::kMlpIn, 2},
              {"mlp.down_proj", LoraSite::kMlpOut, 0}};
  }
  return {};
}

int64_t SiteInput(const ModelConfig& c, LoraSite site) {
  switch (site) {
    case LoraSite::kQkv:
    case LoraSite::kMlpIn: return c.hidden_size;
    case LoraSite::kOut: return c.q_size();
    case LoraSite::kMlpOut: return c.intermediate_size;
  }
  return 0;
}

int64_t SiteOutput(const ModelConfig& c, LoraSite site) {
  switch (site) {
    case LoraSite::kQkv: return c.qkv_size();
    case LoraSite::kOut:
    case LoraSite::kMlpOut: return c.hidden_size;
    case LoraSite::kMlpIn: return c.gated_mlp ? 2 * int64_t{c.intermediate_size} : c.intermediate_size;
  }
  return 0;
}

// The part of the engine's projections `module` (a checkpoint module name) is; nullopt when it is none of them.
std::optional<ModulePart> LocateModule(const std::string& module, const ModelConfig& c) {
  for (const std::string& prefix : LayerPrefixes(c.arch)) {
    if (!absl::StartsWith(module, prefix)) continue;
    const std::string rest = module.substr(prefix.size());
    const size_t dot = rest.find('.');
    int layer = 0;
    if (dot == std::string::npos || !absl::SimpleAtoi(rest.substr(0, dot), &layer) || layer < 0 ||
        layer >= c.num_layers || rest.substr(0, dot) != absl::StrCat(layer)) {
      continue;
    }
    const std::string suffix = rest.substr(dot + 1);
    for (const SitePart& p : LayerProjections(c.arch)) {
      if (suffix != p.suffix) continue;
      ModulePart part;
      part.layer = layer;
      part.site = p.site;
      part.in = SiteInput(c, p.site);
      part.rows = SiteOutput(c, p.site);
      part.neox_interleaved = c.arch == Architecture::kGptNeox && p.site == LoraSite::kQkv;
      if (p.site == LoraSite::kQkv && p.part > 0) {
        const int64_t offsets[] = {0, c.q_size(), int64_t{c.q_size()} + c.kv_size()};
        part.row_offset = offsets[p.part - 1];
        part.rows = p.part == 1 ? c.q_size() : c.kv_size();
      } else if (p.site == LoraSite::kMlpIn && p.part > 0) {
        part.row_offset = (p.part - 1) * int64_t{c.intermediate_size};
        part.rows = c.intermediate_size;
      }
      return part;
    }
  }
  return std::nullopt;
}

// What a refused module is, for the message.
std::string WhyNotServed(const std::string& module) {
  for (const char* head : {"embed_tokens", "lm_head", "wte", "wpe", "embed_in", "embed_out"}) {
    if (absl::StrContains(module, head)) return "LoRA on the embeddings or the LM head is not supported";
  }
  return "it is not an attention or MLP projection of this model's layers";
}

struct ModuleTensors {
  std::string a, b;  // tensor names
  ModulePart part;
};

}  // namespace

absl::StatusOr<LoraConfig> ParseLoraConfig(const std::string& text, const std::string& source) {
  ARACH_ASSIGN_OR_RETURN(const json root, ParseJsonObject(text, source));
  const auto field = [&](const char* name) -> const json* {
    const auto it = root.find(name);
    return it == root.end() || it->is_null() ? nullptr : &*it;
  };
  const auto flag = [&](const char* name) -> absl::StatusOr<bool> {
    const json* v = field(name);
    if (v == nullptr) return false;
    if (!v->is_boolean()) return InvalidField(source, absl::StrCat("field \"", name, "\" must be true or false"));
    return v->get<bool>();
  };
  const auto nonempty = [&](const char* name) {
    const json* v = field(name);
    return v != nullptr && !(v->is_object() || v->is_array() ? v->empty() : false);
  };
  LoraConfig config;
  if (const json* type = field("peft_type"); type != nullptr && (!type->is_string() || type->get<std::string>() != "LORA")) {
    return InvalidField(source, absl::StrCat("field \"peft_type\" is ", type->dump(), ": only LORA adapters are served"));
  }
  const json* r = field("r");
  if (r == nullptr || !r->is_number_integer() || r->get<int64_t>() < 1 || r->get<int64_t>() > 65536) {
    return InvalidField(source, "field \"r\" must be a positive integer (the adapter's rank)");
  }
  config.r = static_cast<int>(r->get<int64_t>());
  const json* alpha = field("lora_alpha");
  if (alpha == nullptr) {
    config.lora_alpha = 8;  // PEFT's default
  } else if (!alpha->is_number() || !std::isfinite(alpha->get<double>())) {
    return InvalidField(source, "field \"lora_alpha\" must be a number");
  } else {
    config.lora_alpha = alpha->get<double>();
  }
  ARACH_ASSIGN_OR_RETURN(config.use_rslora, flag("use_rslora"));
  ARACH_ASSIGN_OR_RETURN(const bool dora, flag("use_dora"));
  if (dora) return InvalidField(source, "field \"use_dora\": DoRA adapters are not supported");
  ARACH_ASSIGN_OR_RETURN(const bool lora_bias, flag("lora_bias"));
  if (lora_bias) return InvalidField(source, "field \"lora_bias\": LoRA biases are not supported");
  if (const json* bias = field("bias"); bias != nullptr && (!bias->is_string() || bias->get<std::string>() != "none")) {
    return InvalidField(source, absl::StrCat("field \"bias\" is ", bias->dump(), ": only \"none\" is supported (the base biases stay)"));
  }
  if (nonempty("modules_to_save")) {
    return InvalidField(source, "field \"modules_to_save\": adapters that replace whole modules are not supported");
  }
  if (nonempty("alpha_pattern")) return InvalidField(source, "field \"alpha_pattern\": per-module alphas are not supported");
  return config;
}

size_t LoraAdapter::parameter_count() const {
  size_t count = 0;
  for (const LoraLayer& layer : layers) {
    for (const LoraProjection& p : layer.sites) count += p.a.data.size() + p.b.data.size();
  }
  return count;
}

absl::StatusOr<LoraAdapter> LoadLoraAdapter(const std::string& name, const std::string& dir, const ModelConfig& config) {
  const std::string config_path = (std::filesystem::path(dir) / kConfigFile).string();
  const std::string weights_path = (std::filesystem::path(dir) / kWeightsFile).string();
  ARACH_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString(config_path));
  ARACH_ASSIGN_OR_RETURN(LoraConfig lora, ParseLoraConfig(config_text, config_path));
  std::error_code error;
  if (!std::filesystem::exists(weights_path, error) &&
      std::filesystem::exists(std::filesystem::path(dir) / "adapter_model.bin", error)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": adapter_model.bin (a PyTorch pickle) is not read; save the "
                                                   "adapter as ", kWeightsFile, " (PEFT's safe_serialization)"));
  }
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file, Checkpoint::OpenFile(weights_path));

  // Pair every tensor with its module.
  std::map<std::string, ModuleTensors> modules;
  for (const std::string& tensor : file->Names()) {
    const auto refuse = [&](absl::string_view why) {
      return InvalidField(weights_path, absl::StrCat("tensor \"", tensor, "\": ", why));
    };
    std::string module;
    bool is_a = false;
    for (const auto& [suffix, a] : {std::pair{".lora_A.weight", true}, std::pair{".lora_B.weight", false}}) {
      if (absl::EndsWith(tensor, suffix)) {
        module = tensor.substr(0, tensor.size() - std::string(suffix).size());
        is_a = a;
      }
    }
    if (module.empty()) {
      return refuse(absl::StrContains(tensor, "lora_magnitude_vector") ? "DoRA adapters are not supported"
                    : absl::StrContains(tensor, "lora_embedding")      ? "LoRA on the embeddings is not supported"
                                                                       : "not a LoRA weight (NAME.lora_A.weight or NAME.lora_B.weight)");
    }
    if (!absl::StartsWith(module, kNamePrefix)) {
      return refuse(absl::StrCat("LoRA weights are named ", kNamePrefix, "MODULE.lora_A/B.weight"));
    }
    module = module.substr(std::string(kNamePrefix).size());
    const std::optional<ModulePart> part = LocateModule(module, config);
    if (!part.has_value()) {
      return refuse(absl::StrCat("module \"", module, "\" cannot take a LoRA here: ", WhyNotServed(module), " (",
                                 ArchitectureName(config.arch), ", ", config.num_layers, " layers)"));
    }
    ModuleTensors& m = modules[module];
    m.part = *part;
    (is_a ? m.a : m.b) = tensor;
  }
  if (modules.empty()) return InvalidField(weights_path, "holds no LoRA weights");

  // Per layer and site, the parts that fill it, in row order.
  LoraAdapter adapter;
  adapter.name = name;
  adapter.source = dir;
  adapter.layers.resize(config.num_layers);
  std::map<std::pair<int, LoraSite>, std::vector<const ModuleTensors*>> sites;
  for (const auto& [module, m] : modules) {
    if (m.a.empty() || m.b.empty()) {
      return InvalidField(weights_path, absl::StrCat("module \"", module, "\" has ", m.a.empty() ? "lora_B but no lora_A" : "lora_A but no lora_B"));
    }
    adapter.modules.push_back(module);
    sites[{m.part.layer, m.part.site}].push_back(&m);
  }
  for (auto& [key, parts] : sites) {
    std::sort(parts.begin(), parts.end(), [](const ModuleTensors* x, const ModuleTensors* y) { return x->part.row_offset < y->part.row_offset; });
    const int64_t in = SiteInput(config, key.second), out = SiteOutput(config, key.second);
    // Each part's rank, from its A's shape.
    std::vector<int64_t> ranks;
    for (const ModuleTensors* m : parts) {
      ARACH_ASSIGN_OR_RETURN(const TensorInfo* a_info, file->Find(m->a));
      if (a_info->shape.size() != 2 || a_info->shape[0] < 1 || a_info->shape[1] != in) {
        return InvalidField(weights_path, absl::StrCat("tensor \"", m->a, "\" has shape ", a_info->ShapeString(), ", expected [r, ", in, "]"));
      }
      ranks.push_back(a_info->shape[0]);
    }
    int64_t total_rank = 0;
    for (int64_t r : ranks) total_rank += r;
    LoraProjection& projection = adapter.layers[key.first].sites[static_cast<int>(key.second)];
    projection.a.shape = {total_rank, in};
    projection.a.data.reserve(static_cast<size_t>(total_rank * in));
    projection.b.shape = {out, total_rank};
    projection.b.data.assign(static_cast<size_t>(out * total_rank), 0.0f);
    int64_t column = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const ModuleTensors& m = *parts[i];
      const int64_t r = ranks[i];
      adapter.max_rank = std::max<int>(adapter.max_rank, static_cast<int>(r));
      ARACH_ASSIGN_OR_RETURN(std::vector<float> a, file->ReadFloat(m.a, {r, in}));
      projection.a.data.insert(projection.a.data.end(), a.begin(), a.end());
      HostTensor b;
      ARACH_ASSIGN_OR_RETURN(b.data, file->ReadFloat(m.b, {m.part.rows, r}));
      b.shape = {m.part.rows, r};
      if (m.part.neox_interleaved) b = DeinterleaveQkv(b, config.num_heads, config.head_dim);
      const double scale = lora.lora_alpha / (lora.use_rslora ? std::sqrt(static_cast<double>(r)) : static_cast<double>(r));
      for (int64_t row = 0; row < m.part.rows; ++row) {
        for (int64_t j = 0; j < r; ++j) {
          projection.b.data[static_cast<size_t>((m.part.row_offset + row) * total_rank + column + j)] =
              static_cast<float>(b.data[static_cast<size_t>(row * r + j)] * scale);
        }
      }
      column += r;
    }
  }
  return adapter;
}

absl::Status CheckLoraName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("required (a non-empty name)");
  if (name.find_first_of(":,") != absl::string_view::npos) {
    return absl::InvalidArgumentError("must not contain ':' (NAME:VARIANT names a variant) or ','");
  }
  return absl::OkStatus();
}

absl::Status CheckLoraRank(const LoraAdapter& adapter, const LoraLimits& limits) {
  if (limits.max_rank <= 0 || adapter.max_rank <= limits.max_rank) return absl::OkStatus();
  return InvalidField(adapter.source, absl::StrCat("rank ", adapter.max_rank, " exceeds --max_lora_rank ", limits.max_rank,
                                              " (the largest rank this server keeps memory for)"));
}

std::array<LoraSiteShape, kLoraSites> LoraSiteShapesBound(const ModelConfig& config, int rank) {
  std::array<LoraSiteShape, kLoraSites> shapes{};
  for (const SitePart& p : LayerProjections(config.arch)) shapes[static_cast<size_t>(p.site)].rank += rank;
  for (int s = 0; s < kLoraSites; ++s) {
    shapes[static_cast<size_t>(s)].in = SiteInput(config, static_cast<LoraSite>(s));
    shapes[static_cast<size_t>(s)].out = SiteOutput(config, static_cast<LoraSite>(s));
  }
  return shapes;
}

}  // namespace arach
