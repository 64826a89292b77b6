#include "tests/testing/fixtures.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "engine/backend/backend.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/sampling/logprobs.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/bundle/model_bundle.h"
#include "tests/testing/build_paths.h"

namespace arach::testing {

std::string FixturesDir() {
  if (const char* env = std::getenv("ARACH_FIXTURES"); env != nullptr && *env != '\0') return env;
  return ConfiguredFixturesDir();
}

bool HaveFixtures() {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(FixturesDir()) / "refs" / "refs.json", ec);
}

std::string FixturePath(const std::string& relative) { return (std::filesystem::path(FixturesDir()) / relative).string(); }

namespace {

const nlohmann::json& LoadJson(const std::string& relative) {
  static std::map<std::string, nlohmann::json>* cache = new std::map<std::string, nlohmann::json>();
  auto it = cache->find(relative);
  if (it == cache->end()) {
    auto text = ReadFileToString(FixturePath(relative));
    it = cache->emplace(relative, nlohmann::json::parse(text.ok() ? *text : "{}")).first;
  }
  return it->second;
}

const Checkpoint& LoadTensors(const std::string& relative) {
  static std::map<std::string, std::unique_ptr<Checkpoint>>* cache = new std::map<std::string, std::unique_ptr<Checkpoint>>();
  auto it = cache->find(relative);
  if (it == cache->end()) {
    auto checkpoint = Checkpoint::OpenFile(FixturePath(relative));
    if (!checkpoint.ok()) {
      ADD_FAILURE() << checkpoint.status();
      std::abort();
    }
    it = cache->emplace(relative, std::move(*checkpoint)).first;
  }
  return *it->second;
}

}  // namespace

bool IsModernModel(const std::string& model) {
  return model == "qwen3-tiny" || model == "qwen2-tiny" || model == "llama3-tiny";
}

std::string RefsFileFor(const std::string& model) {
  return IsModernModel(model) ? "refs/refs_modern.safetensors" : "refs/refs.safetensors";
}

std::vector<std::string> FixtureServerFlags(const std::string& name) {
  return {"--model=" + FixturePath(name), "--adapter=" + FixturePath(name + "/preproj.safetensors"),
          "--arach_hub_embedding=" + FixturePath(RefsFileFor(name)) + ":" + name + ".hub_embedding"};
}

const nlohmann::json& RefsJson() { return LoadJson("refs/refs.json"); }
const nlohmann::json& ModernRefsJson() { return LoadJson("refs/refs_modern.json"); }
const nlohmann::json& RefsJsonFor(const std::string& model) { return IsModernModel(model) ? ModernRefsJson() : RefsJson(); }
const nlohmann::json& SinkRefsJson() { return LoadJson("refs/sink_refs.json"); }

const Checkpoint& RefsTensors() { return LoadTensors("refs/refs.safetensors"); }

std::vector<float> RefTensor(const std::string& name) {
  const Checkpoint& refs = RefsTensors().Has(name) ? RefsTensors() : LoadTensors("refs/refs_modern.safetensors");
  auto values = refs.ReadFloat(name);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<float>{};
}

bool HasRefTensor(const std::string& name) {
  return RefsTensors().Has(name) || LoadTensors("refs/refs_modern.safetensors").Has(name);
}

std::vector<int32_t> RefPrompt(const std::string& model, const std::string& prompt) {
  return RefsJsonFor(model)["models"][model]["prompts"][prompt].get<std::vector<int32_t>>();
}

void PrintTo(const RefCase& c, std::ostream* os) { *os << c.model << " " << c.variant; }

std::string RefCaseName(const ::testing::TestParamInfo<RefCase>& info) {
  std::string name = info.param.model + "_" + info.param.variant;
  for (char& c : name) if (c == '-') c = '_';
  return name;
}

std::vector<RefCase> ReferenceCases(bool modern) {
  std::vector<RefCase> cases;
  std::vector<std::string> models = {"gpt2-tiny", "neox-tiny"};
  if (modern) models.insert(models.end(), {"qwen3-tiny", "qwen2-tiny", "llama3-tiny"});
  for (const std::string& model : models) {
    for (const char* variant : {"base", "arach", "arach_b0", "skip", "arach_skip"}) cases.push_back({model, variant});
  }
  for (const char* variant : {"base", "arach", "arach_b0"}) cases.push_back({"llama-stories260k", variant});
  return cases;
}

Variant VariantOfRef(const std::string& ref_name) {
  Variant v;
  v.arach = ref_name == "arach" || ref_name == "arach_b0" || ref_name == "arach_skip";
  if (ref_name == "arach_b0") v.arach_offset = 0.0f;
  v.skip = ref_name == "skip" || ref_name == "arach_skip";
  return v;
}

absl::StatusOr<std::vector<int32_t>> ValidationIds(const std::string& model) {
  if (IsModernModel(model)) return ModernRefsJson()["models"][model]["val_ids"].get<std::vector<int32_t>>();
  if (model == "llama-stories260k") {
    const auto story = RefsJson()["notes"]["llama_greedy_from_bos_60"].get<std::vector<int32_t>>();
    std::vector<int32_t> val;
    for (int r = 0; r < 6; ++r) val.insert(val.end(), story.begin(), story.end());
    return val;
  }
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(FixturePath(model)));
  ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(FixturePath("data/tinyshakespeare.txt")));
  ARACH_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer->Encode(text, false));
  return std::vector<int32_t>(ids.begin() + static_cast<long>(0.9 * ids.size()), ids.end());
}

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, const FixtureOptions& options) {
  const std::string dir = options.model_dir.empty() ? FixturePath(name) : options.model_dir;
  ARACH_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir));
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  ARACH_ASSIGN_OR_RETURN(ModelWeights weights, LoadModelWeights(*checkpoint, config));
  LoadModelOptions load;
  if (options.reference_hub) load.hub_embedding = FixturePath(RefsFileFor(name)) + ":" + name + ".hub_embedding";
  if (options.adapter) load.adapter = FixturePath(name) + "/preproj.safetensors";
  load.lora_modules = options.lora_modules;
  ARACH_ASSIGN_OR_RETURN(FeatureWeights features, LoadFeatureWeights(config, weights, load));
  const BackendOptions backend_options{0, options.weight_dtype, options.kv_cache_dtype, checkpoint->MatrixDType()};
  std::unique_ptr<Backend> backend;
  if (options.make_backend) {
    ARACH_ASSIGN_OR_RETURN(backend, options.make_backend(backend_options));
  } else {
    ARACH_ASSIGN_OR_RETURN(backend, CreateBackend(options.device, backend_options));
  }
  KvCacheConfig kv;
  kv.num_blocks = options.num_blocks;
  kv.block_size = options.block_size;
  return ModelRunner::Create(std::move(backend), config, std::move(weights), std::move(features), kv);
}

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadFixtureRunner(const std::string& name, int num_blocks, int block_size) {
  FixtureOptions options;
  options.num_blocks = num_blocks;
  options.block_size = block_size;
  return LoadFixtureRunner(name, options);
}

absl::StatusOr<std::vector<double>> TokenLogProbs(OfflineSession& session, const std::vector<int32_t>& ids, int chunk,
                                                  const Variant& variant) {
  if (ids.size() < 2) return absl::InvalidArgumentError("scoring needs at least two tokens");
  std::vector<double> logprobs(ids.size() - 1);
  const std::vector<int32_t> context(ids.begin(), ids.end() - 1);  // the last token predicts nothing
  ARACH_RETURN_IF_ERROR(session.ForEachPosition({context}, chunk, [&](int, int position, std::span<const float> row) {
    logprobs[position] = LogSoftmaxAt(row, ids[position + 1]);
  }, {variant}));
  return logprobs;
}

float MaxAbsDiff(const float* a, const float* b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace arach::testing
