#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/model/json_object.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

// Typed access to config.json fields with errors that name the file and the field.
class ConfigReader {
 public:
  ConfigReader(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

  absl::Status Error(absl::string_view field, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": field \"", field, "\" ", what));
  }

  // The first present, non-null key among `keys` (aliases), or nullptr.
  const json* Lookup(std::initializer_list<const char*> keys, std::string* found = nullptr) const {
    for (const char* key : keys) {
      const auto it = root_.find(key);
      if (it != root_.end() && !it->is_null()) {
        if (found != nullptr) *found = key;
        return &*it;
      }
    }
    return nullptr;
  }

  absl::StatusOr<int> Int(std::initializer_list<const char*> keys, std::optional<int> fallback = std::nullopt) const {
    std::string key;
    const json* value = Lookup(keys, &key);
    if (value == nullptr) {
      if (fallback) return *fallback;
      return Error(*keys.begin(), "is missing");
    }
    if (!value->is_number_integer()) return Error(key, "must be an integer");
    const int64_t v = value->get<int64_t>();
    if (v < 0 || v > (1 << 30)) return Error(key, absl::StrCat("has out-of-range value ", v));
    return static_cast<int>(v);
  }

  absl::StatusOr<double> Number(std::initializer_list<const char*> keys, std::optional<double> fallback = std::nullopt) const {
    std::string key;
    const json* value = Lookup(keys, &key);
    if (value == nullptr) {
      if (fallback) return *fallback;
      return Error(*keys.begin(), "is missing");
    }
    if (!value->is_number()) return Error(key, "must be a number");
    return value->get<double>();
  }

  absl::StatusOr<bool> Bool(std::initializer_list<const char*> keys, bool fallback) const {
    std::string key;
    const json* value = Lookup(keys, &key);
    if (value == nullptr) return fallback;
    if (!value->is_boolean()) return Error(key, "must be true or false");
    return value->get<bool>();
  }

  absl::StatusOr<std::string> String(std::initializer_list<const char*> keys, std::optional<std::string> fallback = std::nullopt) const {
    std::string key;
    const json* value = Lookup(keys, &key);
    if (value == nullptr) {
      if (fallback) return *fallback;
      return Error(*keys.begin(), "is missing");
    }
    if (!value->is_string()) return Error(key, "must be a string");
    return value->get<std::string>();
  }

  // Token id fields may be an integer or a list of integers (Llama 3's eos_token_id).
  absl::StatusOr<std::vector<int>> IntList(const char* key) const {
    std::vector<int> out;
    const json* value = Lookup({key});
    if (value == nullptr) return out;
    if (value->is_number_integer()) {
      out.push_back(value->get<int>());
    } else if (value->is_array()) {
      for (const json& v : *value) {
        if (!v.is_number_integer()) return Error(key, "must hold integers");
        out.push_back(v.get<int>());
      }
    } else {
      return Error(key, "must be an integer or a list of integers");
    }
    return out;
  }

  const json& root() const { return root_; }
  const std::string& source() const { return source_; }

 private:
  const json& root_;
  std::string source_;
};

absl::StatusOr<Activation> ParseActivation(const ConfigReader& reader, const char* key, const std::string& name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "relu") return Activation::kRelu;
  return reader.Error(key, absl::StrCat("has unsupported activation \"", name, "\""));
}

// Reads rope_theta and scaling from either the classic keys or the newer `rope_parameters` object.
absl::Status ParseRope(const ConfigReader& reader, ModelConfig& config, double default_theta,
                       std::initializer_list<const char*> theta_keys) {
  const json* params = reader.Lookup({"rope_parameters"});
  const json* scaling = reader.Lookup({"rope_scaling"});
  if (params != nullptr && !params->is_object()) return reader.Error("rope_parameters", "must be an object");
  if (scaling != nullptr && !scaling->is_object()) return reader.Error("rope_scaling", "must be an object");
  ARACH_ASSIGN_OR_RETURN(config.rope.theta, reader.Number(theta_keys, default_theta));
  const json* scaled = params != nullptr ? params : scaling;
  if (scaled == nullptr) return absl::OkStatus();
  const char* field = params != nullptr ? "rope_parameters" : "rope_scaling";
  ConfigReader sub(*scaled, absl::StrCat(reader.source(), " (", field, ")"));
  if (params != nullptr) {
    ARACH_ASSIGN_OR_RETURN(config.rope.theta, sub.Number({"rope_theta"}, config.rope.theta));
  }
  ARACH_ASSIGN_OR_RETURN(const std::string type, sub.String({"rope_type", "type"}, std::string("default")));
  if (type == "default") return absl::OkStatus();
  if (type == "linear") {
    config.rope.scaling = RopeScaling::kLinear;
    ARACH_ASSIGN_OR_RETURN(config.rope.factor, sub.Number({"factor"}));
    if (config.rope.factor <= 0) return sub.Error("factor", "must be positive");
    return absl::OkStatus();
  }
  if (type == "llama3") {
    config.rope.scaling = RopeScaling::kLlama3;
    ARACH_ASSIGN_OR_RETURN(config.rope.factor, sub.Number({"factor"}));
    ARACH_ASSIGN_OR_RETURN(config.rope.low_freq_factor, sub.Number({"low_freq_factor"}));
    ARACH_ASSIGN_OR_RETURN(config.rope.high_freq_factor, sub.Number({"high_freq_factor"}));
    ARACH_ASSIGN_OR_RETURN(config.rope.original_max_position_embeddings, sub.Int({"original_max_position_embeddings"}));
    if (config.rope.factor <= 0 || config.rope.high_freq_factor <= config.rope.low_freq_factor) {
      return sub.Error("factor", "llama3 scaling needs factor > 0 and high_freq_factor > low_freq_factor");
    }
    return absl::OkStatus();
  }
  return sub.Error("rope_type", absl::StrCat("\"", type, "\" is not supported (default, linear, llama3)"));
}

absl::Status ParseGpt2(const ConfigReader& r, ModelConfig& c) {
  c.arch = Architecture::kGpt2;
  ARACH_ASSIGN_OR_RETURN(c.hidden_size, r.Int({"n_embd", "hidden_size"}));
  ARACH_ASSIGN_OR_RETURN(c.num_layers, r.Int({"n_layer", "num_hidden_layers"}));
  ARACH_ASSIGN_OR_RETURN(c.num_heads, r.Int({"n_head", "num_attention_heads"}));
  c.num_kv_heads = c.num_heads;
  ARACH_ASSIGN_OR_RETURN(c.intermediate_size, r.Int({"n_inner"}, 4 * c.hidden_size));
  ARACH_ASSIGN_OR_RETURN(c.vocab_size, r.Int({"vocab_size"}));
  ARACH_ASSIGN_OR_RETURN(c.max_positions, r.Int({"n_positions", "n_ctx", "max_position_embeddings"}));
  ARACH_ASSIGN_OR_RETURN(double eps, r.Number({"layer_norm_epsilon"}, 1e-5));
  c.norm_eps = static_cast<float>(eps);
  ARACH_ASSIGN_OR_RETURN(std::string act, r.String({"activation_function"}, std::string("gelu_new")));
  ARACH_ASSIGN_OR_RETURN(c.activation, ParseActivation(r, "activation_function", act));
  ARACH_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.Bool({"tie_word_embeddings"}, true));
  ARACH_ASSIGN_OR_RETURN(c.scale_attn_weights, r.Bool({"scale_attn_weights"}, true));
  ARACH_ASSIGN_OR_RETURN(c.scale_attn_by_inverse_layer_idx, r.Bool({"scale_attn_by_inverse_layer_idx"}, false));
  c.norm = NormKind::kLayerNorm;
  c.learned_positions = true;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  if (c.num_heads == 0 || c.hidden_size % c.num_heads != 0) {
    return r.Error("n_head", absl::StrCat("(", c.num_heads, ") must divide n_embd (", c.hidden_size, ")"));
  }
  c.head_dim = c.hidden_size / c.num_heads;
  return absl::OkStatus();
}

absl::Status ParseGptNeox(const ConfigReader& r, ModelConfig& c) {
  c.arch = Architecture::kGptNeox;
  ARACH_ASSIGN_OR_RETURN(c.hidden_size, r.Int({"hidden_size"}));
  ARACH_ASSIGN_OR_RETURN(c.num_layers, r.Int({"num_hidden_layers"}));
  ARACH_ASSIGN_OR_RETURN(c.num_heads, r.Int({"num_attention_heads"}));
  c.num_kv_heads = c.num_heads;
  ARACH_ASSIGN_OR_RETURN(c.intermediate_size, r.Int({"intermediate_size"}, 4 * c.hidden_size));
  ARACH_ASSIGN_OR_RETURN(c.vocab_size, r.Int({"vocab_size"}));
  ARACH_ASSIGN_OR_RETURN(c.max_positions, r.Int({"max_position_embeddings"}));
  ARACH_ASSIGN_OR_RETURN(double eps, r.Number({"layer_norm_eps"}, 1e-5));
  c.norm_eps = static_cast<float>(eps);
  ARACH_ASSIGN_OR_RETURN(std::string act, r.String({"hidden_act"}, std::string("gelu")));
  ARACH_ASSIGN_OR_RETURN(c.activation, ParseActivation(r, "hidden_act", act));
  ARACH_ASSIGN_OR_RETURN(c.parallel_residual, r.Bool({"use_parallel_residual"}, true));
  ARACH_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.Bool({"tie_word_embeddings"}, false));
  ARACH_ASSIGN_OR_RETURN(bool attention_bias, r.Bool({"attention_bias"}, true));
  c.qkv_bias = c.attn_out_bias = attention_bias;
  c.mlp_bias = true;
  c.norm = NormKind::kLayerNorm;
  c.use_rope = true;
  if (c.num_heads == 0 || c.hidden_size % c.num_heads != 0) {
    return r.Error("num_attention_heads", absl::StrCat("(", c.num_heads, ") must divide hidden_size (", c.hidden_size, ")"));
  }
  c.head_dim = c.hidden_size / c.num_heads;
  // Rotary fraction: classic `rotary_pct`, newer `partial_rotary_factor` (top level or in rope_parameters).
  double fraction = 1.0;
  if (const nlohmann::json* params = r.Lookup({"rope_parameters"}); params != nullptr && params->is_object()) {
    const ConfigReader sub(*params, absl::StrCat(r.source(), " (rope_parameters)"));
    ARACH_ASSIGN_OR_RETURN(fraction, sub.Number({"partial_rotary_factor"}, fraction));
  }
  ARACH_ASSIGN_OR_RETURN(fraction, r.Number({"partial_rotary_factor", "rotary_pct"}, fraction));
  if (fraction <= 0.0 || fraction > 1.0) return r.Error("rotary_pct", "must be in (0, 1]");
  c.rope.rotary_dim = static_cast<int>(c.head_dim * fraction);
  if (c.rope.rotary_dim % 2 != 0 || c.rope.rotary_dim == 0) {
    return r.Error("rotary_pct", absl::StrCat("gives an odd or zero rotary dimension ", c.rope.rotary_dim));
  }
  return ParseRope(r, c, 10000.0, {"rope_theta", "rotary_emb_base"});
}

// Sliding windows: Mistral's `sliding_window` applies to every layer; Qwen2/Qwen3 window only with
// use_sliding_window, from layer max_window_layers on, unless `layer_types` lists each layer.
absl::Status ParseSlidingWindows(const ConfigReader& r, ModelConfig& c) {
  if (c.arch == Architecture::kLlama) return absl::OkStatus();
  ARACH_ASSIGN_OR_RETURN(const int window, r.Int({"sliding_window"}, 0));
  bool windowed = c.arch == Architecture::kMistral;
  int first_windowed_layer = 0;
  if (c.arch == Architecture::kQwen2 || c.arch == Architecture::kQwen3) {
    ARACH_ASSIGN_OR_RETURN(windowed, r.Bool({"use_sliding_window"}, false));
    ARACH_ASSIGN_OR_RETURN(first_windowed_layer, r.Int({"max_window_layers"}, c.num_layers));
  }
  if (!windowed || window == 0) return absl::OkStatus();
  c.layer_sliding_window.assign(c.num_layers, 0);
  if (const nlohmann::json* types = r.Lookup({"layer_types"}); types != nullptr) {
    if (!types->is_array() || static_cast<int>(types->size()) != c.num_layers) {
      return r.Error("layer_types", absl::StrCat("must list the type of each of the ", c.num_layers, " layers"));
    }
    for (int l = 0; l < c.num_layers; ++l) {
      const nlohmann::json& type = (*types)[l];
      if (!type.is_string() || (type != "full_attention" && type != "sliding_attention")) {
        return r.Error("layer_types", absl::StrCat("entry ", l, " is not \"full_attention\" or \"sliding_attention\""));
      }
      if (type == "sliding_attention") c.layer_sliding_window[l] = window;
    }
    return absl::OkStatus();
  }
  for (int l = first_windowed_layer; l < c.num_layers; ++l) c.layer_sliding_window[l] = window;
  return absl::OkStatus();
}

// Llama and the families that share its layout (Mistral, Qwen2, Qwen3).
absl::Status ParseLlamaFamily(const ConfigReader& r, ModelConfig& c) {
  ARACH_ASSIGN_OR_RETURN(c.hidden_size, r.Int({"hidden_size"}));
  ARACH_ASSIGN_OR_RETURN(c.num_layers, r.Int({"num_hidden_layers"}));
  ARACH_ASSIGN_OR_RETURN(c.num_heads, r.Int({"num_attention_heads"}));
  ARACH_ASSIGN_OR_RETURN(c.num_kv_heads, r.Int({"num_key_value_heads"}, c.num_heads));
  ARACH_ASSIGN_OR_RETURN(c.intermediate_size, r.Int({"intermediate_size"}));
  ARACH_ASSIGN_OR_RETURN(c.vocab_size, r.Int({"vocab_size"}));
  ARACH_ASSIGN_OR_RETURN(c.max_positions, r.Int({"max_position_embeddings"}, 2048));
  ARACH_ASSIGN_OR_RETURN(double eps, r.Number({"rms_norm_eps"}, 1e-6));
  c.norm_eps = static_cast<float>(eps);
  ARACH_ASSIGN_OR_RETURN(std::string act, r.String({"hidden_act"}, std::string("silu")));
  ARACH_ASSIGN_OR_RETURN(c.activation, ParseActivation(r, "hidden_act", act));
  ARACH_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.Bool({"tie_word_embeddings"}, false));
  ARACH_ASSIGN_OR_RETURN(c.mlp_bias, r.Bool({"mlp_bias"}, false));
  if (c.arch == Architecture::kQwen2) {  // q/k/v always carry biases, the output projection none
    c.qkv_bias = true;
    c.attn_out_bias = false;
  } else {
    ARACH_ASSIGN_OR_RETURN(bool attention_bias, r.Bool({"attention_bias"}, false));
    c.qkv_bias = c.attn_out_bias = attention_bias;
  }
  c.qk_norm = c.arch == Architecture::kQwen3;
  c.norm = NormKind::kRmsNorm;
  c.gated_mlp = true;
  c.use_rope = true;
  if (c.num_heads == 0) return r.Error("num_attention_heads", "must be positive");
  ARACH_ASSIGN_OR_RETURN(c.head_dim, r.Int({"head_dim"}, c.hidden_size / c.num_heads));
  if (c.num_kv_heads == 0 || c.num_heads % c.num_kv_heads != 0) {
    return r.Error("num_key_value_heads", absl::StrCat("(", c.num_kv_heads, ") must divide num_attention_heads (", c.num_heads, ")"));
  }
  if (c.head_dim % 2 != 0) return r.Error("head_dim", absl::StrCat("(", c.head_dim, ") must be even for rotary embeddings"));
  c.rope.rotary_dim = c.head_dim;
  ARACH_RETURN_IF_ERROR(ParseSlidingWindows(r, c));
  return ParseRope(r, c, 10000.0, {"rope_theta"});
}

}  // namespace

absl::string_view ArchitectureName(Architecture arch) {
  switch (arch) {
    case Architecture::kGpt2: return "gpt2";
    case Architecture::kGptNeox: return "gpt_neox";
    case Architecture::kLlama: return "llama";
    case Architecture::kMistral: return "mistral";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
  }
  return "?";
}

int ModelConfig::UniformSlidingWindow() const {
  if (layer_sliding_window.empty()) return 0;
  int window = layer_sliding_window[0];
  for (int w : layer_sliding_window) {
    if (w == 0) return 0;
    window = std::max(window, w);
  }
  return window;
}

std::vector<float> RopeConfig::InverseFrequencies() const {
  std::vector<float> inv(rotary_dim / 2);
  constexpr double kPi = 3.14159265358979323846;
  for (int i = 0; i < rotary_dim / 2; ++i) {
    // Same float32 arithmetic as torch: base ** (arange(0, r, 2) / r)
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(rotary_dim);
    double freq = 1.0 / std::pow(theta, static_cast<double>(exponent));
    if (scaling == RopeScaling::kLinear) {
      freq /= factor;
    } else if (scaling == RopeScaling::kLlama3) {
      const double low_wavelen = original_max_position_embeddings / low_freq_factor;
      const double high_wavelen = original_max_position_embeddings / high_freq_factor;
      const double wavelen = 2 * kPi / freq;
      if (wavelen > low_wavelen) {
        freq /= factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (original_max_position_embeddings / wavelen - low_freq_factor) /
                              (high_freq_factor - low_freq_factor);
        freq = (1 - smooth) * freq / factor + smooth * freq;
      }
    }
    inv[i] = static_cast<float>(freq);
  }
  return inv;
}

std::vector<float> RopeConfig::CosSinTable(int positions) const {
  const std::vector<float> inv = InverseFrequencies();
  const int half = rotary_dim / 2;
  std::vector<float> table(static_cast<size_t>(positions) * rotary_dim);
  for (int p = 0; p < positions; ++p) {
    float* row = &table[static_cast<size_t>(p) * rotary_dim];
    for (int i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv[i];
      row[i] = std::cos(angle);
      row[half + i] = std::sin(angle);
    }
  }
  return table;
}

float ModelConfig::AttentionScale(int layer) const {
  float scale = scale_attn_weights ? 1.0f / std::sqrt(static_cast<float>(head_dim)) : 1.0f;
  if (scale_attn_by_inverse_layer_idx) scale /= static_cast<float>(layer + 1);
  return scale;
}

absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source) {
  ARACH_ASSIGN_OR_RETURN(const json root, ParseJsonObject(json_text, source));
  ConfigReader reader(root, source);
  // (not ARACH_ASSIGN_OR_RETURN: g++ 12 takes the moved-from string for uninitialised there, -Wmaybe-uninitialized)
  const absl::StatusOr<std::string> model_type_read = reader.String({"model_type"});
  if (!model_type_read.ok()) return model_type_read.status();
  const std::string& model_type = *model_type_read;
  ModelConfig config;
  if (model_type == "gpt2") {
    ARACH_RETURN_IF_ERROR(ParseGpt2(reader, config));
  } else if (model_type == "gpt_neox") {
    ARACH_RETURN_IF_ERROR(ParseGptNeox(reader, config));
  } else if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2" || model_type == "qwen3") {
    config.arch = model_type == "llama"     ? Architecture::kLlama
                  : model_type == "mistral" ? Architecture::kMistral
                  : model_type == "qwen2"   ? Architecture::kQwen2
                                            : Architecture::kQwen3;
    ARACH_RETURN_IF_ERROR(ParseLlamaFamily(reader, config));
  } else {
    return reader.Error("model_type", absl::StrCat("\"", model_type,
                                                   "\" is not supported (gpt2, gpt_neox, llama, mistral, qwen2, qwen3)"));
  }
  for (const auto& [value, name] : {std::pair{config.hidden_size, "hidden_size"}, {config.num_layers, "num_hidden_layers"},
                                    {config.vocab_size, "vocab_size"}, {config.max_positions, "max_position_embeddings"},
                                    {config.intermediate_size, "intermediate_size"}, {config.head_dim, "head_dim"}}) {
    if (value <= 0) return reader.Error(name, "must be positive");
  }
  ARACH_ASSIGN_OR_RETURN(std::vector<int> bos, reader.IntList("bos_token_id"));
  config.bos_token_id = bos.empty() ? -1 : bos.front();
  ARACH_ASSIGN_OR_RETURN(config.eos_token_ids, reader.IntList("eos_token_id"));
  for (int id : config.eos_token_ids) {
    if (id < 0 || id >= config.vocab_size) return reader.Error("eos_token_id", absl::StrCat("id ", id, " is outside the vocabulary"));
  }
  if (config.bos_token_id >= config.vocab_size) return reader.Error("bos_token_id", "is outside the vocabulary");
  if (const json* quantization = reader.Lookup({"quantization_config"}); quantization != nullptr) {
    ARACH_ASSIGN_OR_RETURN(config.quantization, ParseWeightQuantization(*quantization, source));
  }
  return config;
}

absl::Status MergeGenerationConfig(const std::string& json_text, const std::string& source, ModelConfig& config) {
  ARACH_ASSIGN_OR_RETURN(const json root, ParseJsonObject(json_text, source));
  ConfigReader reader(root, source);
  ARACH_ASSIGN_OR_RETURN(std::vector<int> eos, reader.IntList("eos_token_id"));
  for (int id : eos) {
    if (id < 0 || id >= config.vocab_size) return reader.Error("eos_token_id", absl::StrCat("id ", id, " is outside the vocabulary"));
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) == config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(id);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& model_dir) {
  const std::filesystem::path dir(model_dir);
  const std::string path = (dir / "config.json").string();
  ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  ARACH_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(text, path));
  std::error_code ec;
  if (std::filesystem::exists(dir / "generation_config.json", ec)) {
    const std::string generation = (dir / "generation_config.json").string();
    ARACH_ASSIGN_OR_RETURN(std::string generation_text, ReadFileToString(generation));
    ARACH_RETURN_IF_ERROR(MergeGenerationConfig(generation_text, generation, config));
  }
  return config;
}

}  // namespace arach
