#include "tools/make_model/make_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/mapped_file.h"
#include "engine/core/random.h"
#include "engine/core/status.h"
#include "engine/model/safetensors.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/make_model/synthetic_tokenizer.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Shape {
  int d, layers, heads, kv_heads, head_dim, inner, vocab, context;
  bool tie = false;        // Llama family: the LM head is the input embedding
  int sliding_window = 0;  // Mistral
};

// Sizes of the real models each preset mirrors.
const std::map<std::pair<std::string, std::string>, std::pair<Shape, std::string>>& PresetTable() {
  static const auto* table = new std::map<std::pair<std::string, std::string>, std::pair<Shape, std::string>>{
      {{"gpt2", "tiny"}, {{64, 2, 2, 2, 32, 256, 1024, 256}, "GPT-2 layout, d=64, 2 layers (tests)"}},
      {{"gpt2", "mini"}, {{256, 4, 4, 4, 64, 1024, 50257, 1024}, "GPT-2 layout, d=256, 4 layers, GPT-2's vocabulary (sanitized tests)"}},
      {{"gpt2", "124m"}, {{768, 12, 12, 12, 64, 3072, 50257, 1024}, "GPT-2 small (124M)"}},
      {{"gpt2", "355m"}, {{1024, 24, 16, 16, 64, 4096, 50257, 1024}, "GPT-2 medium (355M)"}},
      {{"gpt_neox", "tiny"}, {{64, 2, 2, 2, 32, 256, 1024, 256}, "Pythia layout, d=64, 2 layers (tests)"}},
      {{"gpt_neox", "160m"}, {{768, 12, 12, 12, 64, 3072, 50304, 2048}, "Pythia-160M"}},
      {{"gpt_neox", "410m"}, {{1024, 24, 16, 16, 64, 4096, 50304, 2048}, "Pythia-410M"}},
      {{"llama", "tiny"}, {{64, 2, 4, 2, 16, 172, 1024, 256}, "Llama layout with GQA, d=64, 2 layers (tests)"}},
      {{"llama", "1b"}, {{2048, 16, 32, 8, 64, 8192, 128256, 131072, true}, "Llama 3.2 1B (GQA 32/8, llama3 RoPE scaling, tied)"}},
      {{"mistral", "tiny"}, {{64, 2, 4, 2, 16, 172, 1024, 256, false, 16}, "Mistral layout, sliding window 16 (tests)"}},
      {{"mistral", "7b"}, {{4096, 32, 32, 8, 128, 14336, 32000, 32768, false, 4096}, "Mistral 7B v0.1 (sliding window 4096)"}},
      {{"qwen2", "tiny"}, {{64, 2, 4, 2, 16, 172, 1024, 256, true}, "Qwen2 layout (q/k/v biases), d=64 (tests)"}},
      {{"qwen2", "gqa7"}, {{448, 2, 7, 1, 64, 512, 1024, 512, true}, "Qwen2.5-0.5B's attention shape: 7 query heads per KV head of 64 (FlashInfer's prefill kernels decode it), d=448, 2 layers (GPU tests)"}},
      {{"qwen2", "0.5b"}, {{896, 24, 14, 2, 64, 4864, 151936, 32768, true}, "Qwen2.5-0.5B (GQA 14/2, q/k/v biases, tied)"}},
      {{"qwen3", "tiny"}, {{64, 2, 4, 2, 32, 192, 1024, 256, true}, "Qwen3 layout (q/k norms, head_dim 32 > d/heads), d=64 (tests)"}},
      {{"qwen3", "0.6b"}, {{1024, 28, 16, 8, 128, 3072, 151936, 40960, true}, "Qwen3-0.6B (GQA 16/8, head_dim 128, q/k norms, tied)"}},
  };
  return *table;
}

std::string CanonicalPreset(const std::string& preset) {
  for (const char* prefix : {"gpt2-", "pythia-", "llama-", "qwen2-", "qwen2.5-", "qwen3-", "mistral-"}) {
    if (preset.rfind(prefix, 0) == 0) return preset.substr(std::string(prefix).size());
  }
  return preset;
}

// How a tensor is initialised.
enum class Init { kNormal, kOnes, kZeros };

struct TensorPlan {
  std::string name;
  std::vector<int64_t> shape;
  Init init;
  float std = 0.02f;
};

std::vector<TensorPlan> PlanGpt2(const Shape& s) {
  const int64_t d = s.d, f = s.inner;
  const float proj_std = 0.02f / std::sqrt(2.0f * s.layers);
  std::vector<TensorPlan> t = {{"wte.weight", {s.vocab, d}, Init::kNormal}, {"wpe.weight", {s.context, d}, Init::kNormal, 0.01f}};
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrCat("h.", i, ".");
    t.push_back({p + "ln_1.weight", {d}, Init::kOnes});
    t.push_back({p + "ln_1.bias", {d}, Init::kZeros});
    t.push_back({p + "attn.c_attn.weight", {d, 3 * d}, Init::kNormal});
    t.push_back({p + "attn.c_attn.bias", {3 * d}, Init::kZeros});
    t.push_back({p + "attn.c_proj.weight", {d, d}, Init::kNormal, proj_std});
    t.push_back({p + "attn.c_proj.bias", {d}, Init::kZeros});
    t.push_back({p + "ln_2.weight", {d}, Init::kOnes});
    t.push_back({p + "ln_2.bias", {d}, Init::kZeros});
    t.push_back({p + "mlp.c_fc.weight", {d, f}, Init::kNormal});
    t.push_back({p + "mlp.c_fc.bias", {f}, Init::kZeros});
    t.push_back({p + "mlp.c_proj.weight", {f, d}, Init::kNormal, proj_std});
    t.push_back({p + "mlp.c_proj.bias", {d}, Init::kZeros});
  }
  t.push_back({"ln_f.weight", {d}, Init::kOnes});
  t.push_back({"ln_f.bias", {d}, Init::kZeros});
  return t;
}

std::vector<TensorPlan> PlanGptNeox(const Shape& s) {
  const int64_t d = s.d, f = s.inner;
  std::vector<TensorPlan> t = {{"gpt_neox.embed_in.weight", {s.vocab, d}, Init::kNormal}};
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrCat("gpt_neox.layers.", i, ".");
    t.push_back({p + "input_layernorm.weight", {d}, Init::kOnes});
    t.push_back({p + "input_layernorm.bias", {d}, Init::kZeros});
    t.push_back({p + "post_attention_layernorm.weight", {d}, Init::kOnes});
    t.push_back({p + "post_attention_layernorm.bias", {d}, Init::kZeros});
    t.push_back({p + "attention.query_key_value.weight", {3 * d, d}, Init::kNormal});
    t.push_back({p + "attention.query_key_value.bias", {3 * d}, Init::kZeros});
    t.push_back({p + "attention.dense.weight", {d, d}, Init::kNormal});
    t.push_back({p + "attention.dense.bias", {d}, Init::kZeros});
    t.push_back({p + "mlp.dense_h_to_4h.weight", {f, d}, Init::kNormal});
    t.push_back({p + "mlp.dense_h_to_4h.bias", {f}, Init::kZeros});
    t.push_back({p + "mlp.dense_4h_to_h.weight", {d, f}, Init::kNormal});
    t.push_back({p + "mlp.dense_4h_to_h.bias", {d}, Init::kZeros});
  }
  t.push_back({"gpt_neox.final_layer_norm.weight", {d}, Init::kOnes});
  t.push_back({"gpt_neox.final_layer_norm.bias", {d}, Init::kZeros});
  t.push_back({"embed_out.weight", {s.vocab, d}, Init::kNormal});
  return t;
}

// Llama, Mistral, Qwen2 (+ q/k/v biases) and Qwen3 (+ q/k norms) share one layout.
std::vector<TensorPlan> PlanLlamaFamily(const std::string& arch, const Shape& s) {
  const int64_t d = s.d, f = s.inner, hd = s.head_dim, q = static_cast<int64_t>(s.heads) * hd,
                kv = static_cast<int64_t>(s.kv_heads) * hd;
  std::vector<TensorPlan> t = {{"model.embed_tokens.weight", {s.vocab, d}, Init::kNormal}};
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    t.push_back({p + "input_layernorm.weight", {d}, Init::kOnes});
    t.push_back({p + "self_attn.q_proj.weight", {q, d}, Init::kNormal});
    t.push_back({p + "self_attn.k_proj.weight", {kv, d}, Init::kNormal});
    t.push_back({p + "self_attn.v_proj.weight", {kv, d}, Init::kNormal});
    if (arch == "qwen2") {
      t.push_back({p + "self_attn.q_proj.bias", {q}, Init::kNormal});
      t.push_back({p + "self_attn.k_proj.bias", {kv}, Init::kNormal});
      t.push_back({p + "self_attn.v_proj.bias", {kv}, Init::kNormal});
    }
    if (arch == "qwen3") {
      t.push_back({p + "self_attn.q_norm.weight", {hd}, Init::kOnes});
      t.push_back({p + "self_attn.k_norm.weight", {hd}, Init::kOnes});
    }
    t.push_back({p + "self_attn.o_proj.weight", {d, q}, Init::kNormal});
    t.push_back({p + "post_attention_layernorm.weight", {d}, Init::kOnes});
    t.push_back({p + "mlp.gate_proj.weight", {f, d}, Init::kNormal});
    t.push_back({p + "mlp.up_proj.weight", {f, d}, Init::kNormal});
    t.push_back({p + "mlp.down_proj.weight", {d, f}, Init::kNormal});
  }
  t.push_back({"model.norm.weight", {d}, Init::kOnes});
  if (!s.tie) t.push_back({"lm_head.weight", {s.vocab, d}, Init::kNormal});
  return t;
}

// A random adapter with the method's names (E = 1.25 d), small enough to perturb the model mildly.
absl::Status WriteRandomAdapter(const std::string& arch, const Shape& s, uint64_t seed, const std::string& path) {
  const int64_t d = s.d, e = s.d * 5 / 4;
  SafetensorsStreamWriter writer;
  std::vector<std::string> modules;
  for (int i = 0; i < s.layers; ++i) {
    modules.push_back(arch == "gpt2" ? absl::StrCat("h.", i, ".attn.c_attn")
                      : arch == "gpt_neox" ? absl::StrCat("gpt_neox.layers.", i, ".attention.query_key_value")
                                           : absl::StrCat("model.layers.", i, ".self_attn"));
  }
  for (const std::string& m : modules) {
    writer.Declare(m + ".preproj.up_proj.weight", DType::kF32, {e, d});
    writer.Declare(m + ".preproj.down_proj.weight", DType::kF32, {d, e});
    writer.Declare(m + ".preproj.skip_proj.weight", DType::kF32, {d, d});
  }
  ARACH_RETURN_IF_ERROR(writer.Open(path, {{"expansion", "1.25"}, {"activation", "silu"}, {"generator", "arach-run make-model"}}));
  NormalSampler sampler(seed ^ 0xada97e4ull);
  std::vector<float> values;
  for (size_t i = 0; i < modules.size(); ++i) {
    for (const auto& [count, scale] : {std::pair<int64_t, float>{e * d, 0.01f}, {d * e, 0.01f}, {d * d, 1e-3f}}) {
      values.resize(static_cast<size_t>(count));
      for (float& v : values) v = scale * sampler.Next();
      ARACH_RETURN_IF_ERROR(writer.Append(values.data(), values.size() * sizeof(float)));
    }
  }
  return writer.Close();
}

// The BOS and EOS ids of the config: the synthetic tokenizer's <|endoftext|> (vocab - 1), or those that
// tokenizer_config.json names when the tokenizer was copied from a real model.
struct SpecialIds {
  int bos, eos;
};

absl::StatusOr<SpecialIds> SpecialIdsOf(const std::string& dir, const Shape& s, bool copied) {
  SpecialIds ids{s.vocab - 1, s.vocab - 1};
  if (!copied) return ids;
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(dir));
  if (tokenizer->vocab_size() > s.vocab) {
    return absl::InvalidArgumentError(absl::StrCat("make-model: the tokenizer has ", tokenizer->vocab_size(), " tokens, the preset's vocabulary ",
                                                   s.vocab));
  }
  const TokenizerConfig& config = tokenizer->config();
  const std::optional<std::string>& eos = config.eos_token;
  const std::optional<std::string>& bos = config.bos_token ? config.bos_token : config.eos_token;
  if (eos) ids.eos = tokenizer->TokenToId(*eos).value_or(ids.eos);
  if (bos) ids.bos = tokenizer->TokenToId(*bos).value_or(ids.bos);
  return ids;
}

json ConfigJson(const std::string& arch, const Shape& s, const std::string& dtype_name, const SpecialIds& special_ids) {
  const int bos = special_ids.bos, special = special_ids.eos;
  const std::string torch_dtype = dtype_name == "F32" ? "float32" : dtype_name == "F16" ? "float16" : "bfloat16";
  if (arch == "gpt2") {
    return {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"n_embd", s.d}, {"n_layer", s.layers},
            {"n_head", s.heads}, {"n_inner", nullptr}, {"n_positions", s.context}, {"n_ctx", s.context},
            {"vocab_size", s.vocab}, {"activation_function", "gelu_new"}, {"layer_norm_epsilon", 1e-5},
            {"bos_token_id", bos}, {"eos_token_id", special}, {"tie_word_embeddings", true},
            {"torch_dtype", torch_dtype}};
  }
  if (arch == "gpt_neox") {
    return {{"architectures", {"GPTNeoXForCausalLM"}}, {"model_type", "gpt_neox"}, {"hidden_size", s.d},
            {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads}, {"intermediate_size", s.inner},
            {"max_position_embeddings", s.context}, {"rotary_pct", 0.25}, {"rotary_emb_base", 10000},
            {"use_parallel_residual", true}, {"layer_norm_eps", 1e-5}, {"hidden_act", "gelu"},
            {"tie_word_embeddings", false}, {"vocab_size", s.vocab}, {"bos_token_id", bos},
            {"eos_token_id", special}, {"torch_dtype", torch_dtype}};
  }
  const std::map<std::string, std::string> class_names = {
      {"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}};
  json config = {{"architectures", {class_names.at(arch)}}, {"model_type", arch}, {"hidden_size", s.d},
                 {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kv_heads},
                 {"head_dim", s.head_dim}, {"intermediate_size", s.inner}, {"max_position_embeddings", s.context},
                 {"rms_norm_eps", arch == "qwen2" || arch == "qwen3" ? 1e-6 : 1e-5}, {"hidden_act", "silu"},
                 {"tie_word_embeddings", s.tie}, {"vocab_size", s.vocab}, {"bos_token_id", bos},
                 {"eos_token_id", special}, {"torch_dtype", torch_dtype}};
  if (arch == "llama") {
    config["attention_bias"] = false;
    config["mlp_bias"] = false;
    config["rope_theta"] = s.vocab == 128256 ? 500000.0 : 10000.0;
    if (s.vocab == 128256) {  // Llama 3.x: the llama3 RoPE scaling of the releases
      config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                {"original_max_position_embeddings", 8192}};
    }
  } else if (arch == "mistral") {
    config["rope_theta"] = 10000.0;
    config["sliding_window"] = s.sliding_window;
  } else {  // qwen2, qwen3
    config["rope_theta"] = 1000000.0;
    config["use_sliding_window"] = false;
    config["sliding_window"] = s.context;
    config["max_window_layers"] = s.layers;
    if (arch == "qwen3") config["attention_bias"] = false;
  }
  return config;
}

absl::Status CopyTokenizerFiles(const std::string& from, const std::string& to) {
  int copied = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    const std::string name = entry.path().filename().string();
    const bool tokenizer_file = name == "tokenizer.json" || name == "vocab.json" || name == "merges.txt" ||
                                name == "tokenizer_config.json" || name == "special_tokens_map.json" ||
                                name == "tokenizer.bin" || (name.rfind("tok", 0) == 0 && name.size() > 4 &&
                                                            name.substr(name.size() - 4) == ".bin");
    if (!tokenizer_file) continue;
    fs::copy_file(entry.path(), fs::path(to) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return absl::InternalError(absl::StrCat(entry.path().string(), ": cannot copy: ", ec.message()));
    ++copied;
  }
  if (ec) return absl::NotFoundError(absl::StrCat(from, ": cannot read: ", ec.message()));
  if (copied == 0) return absl::NotFoundError(absl::StrCat(from, ": no tokenizer files to copy"));
  return absl::OkStatus();
}

}  // namespace

std::vector<MakeModelPreset> MakeModelPresets() {
  std::vector<MakeModelPreset> presets;
  for (const auto& [key, value] : PresetTable()) presets.push_back({key.first, key.second, value.second});
  return presets;
}

absl::StatusOr<ModelConfig> MakeModel(const MakeModelOptions& options) {
  const auto it = PresetTable().find({options.arch, CanonicalPreset(options.preset)});
  if (it == PresetTable().end()) {
    std::vector<std::string> known;
    for (const MakeModelPreset& p : MakeModelPresets()) known.push_back(absl::StrCat(p.arch, "/", p.name));
    return absl::InvalidArgumentError(absl::StrCat("make-model: unknown arch/preset \"", options.arch, "/", options.preset,
                                                   "\" (known: ", absl::StrJoin(known, ", "), ")"));
  }
  const Shape& shape = it->second.first;
  std::string dtype_name = options.dtype;
  if (dtype_name.empty()) dtype_name = options.arch == "gpt2" ? "F32" : options.arch == "gpt_neox" ? "F16" : "BF16";
  ARACH_ASSIGN_OR_RETURN(DType dtype, ParseDType(dtype_name));
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError("make-model: --dtype must be F32, F16 or BF16");
  }
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(options.out_dir, ": cannot create: ", ec.message()));

  const std::vector<TensorPlan> plan = options.arch == "gpt2"       ? PlanGpt2(shape)
                                       : options.arch == "gpt_neox" ? PlanGptNeox(shape)
                                                                    : PlanLlamaFamily(options.arch, shape);
  SafetensorsStreamWriter writer;
  for (const TensorPlan& t : plan) writer.Declare(t.name, dtype, t.shape);
  const std::string weights_path = (fs::path(options.out_dir) / "model.safetensors").string();
  ARACH_RETURN_IF_ERROR(writer.Open(weights_path, {{"format", "pt"}, {"generator", "arach-run make-model"},
                                                   {"seed", std::to_string(options.seed)}}));
  std::vector<float> values;
  std::vector<unsigned char> bytes;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& t = plan[i];
    size_t count = 1;
    for (int64_t dim : t.shape) count *= static_cast<size_t>(dim);
    values.resize(count);
    if (t.init == Init::kNormal) {
      NormalSampler sampler(options.seed * 0x100000001b3ull + std::hash<std::string>{}(t.name));
      for (float& v : values) v = t.std * sampler.Next();
    } else {
      std::fill(values.begin(), values.end(), t.init == Init::kOnes ? 1.0f : 0.0f);
    }
    bytes.resize(count * DTypeSize(dtype));
    ConvertFromFloat(dtype, values.data(), count, bytes.data());
    ARACH_RETURN_IF_ERROR(writer.Append(bytes.data(), bytes.size()));
  }
  ARACH_RETURN_IF_ERROR(writer.Close());

  if (options.tokenizer_from.empty()) {
    ARACH_RETURN_IF_ERROR(WriteSyntheticTokenizer(options.out_dir, shape.vocab, options.seed));
  } else {
    ARACH_RETURN_IF_ERROR(CopyTokenizerFiles(options.tokenizer_from, options.out_dir));
  }
  ARACH_ASSIGN_OR_RETURN(const SpecialIds special, SpecialIdsOf(options.out_dir, shape, !options.tokenizer_from.empty()));
  const std::string config_text = ConfigJson(options.arch, shape, dtype_name, special).dump(2);
  const std::string config_path = (fs::path(options.out_dir) / "config.json").string();
  std::ofstream(config_path) << config_text << "\n";
  if (options.write_adapter) {
    ARACH_RETURN_IF_ERROR(WriteRandomAdapter(options.arch, shape, options.seed,
                                             (fs::path(options.out_dir) / "preproj.safetensors").string()));
  }
  return ParseModelConfig(config_text, config_path);
}

}  // namespace arach
