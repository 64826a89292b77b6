#include "tests/testing/test_models.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/core/mapped_file.h"
#include "engine/model/model_config.h"
#include "tests/testing/build_paths.h"
#include "tools/make_model/make_model.h"

namespace arach::testing {
namespace {

#ifdef ARACH_SANITIZED_BUILD
constexpr const char* kPreset = "mini";
#else
constexpr const char* kPreset = "124m";
#endif

// The folder `name` under TestModelsDir(), written by MakeModel(options) unless `marker` is in it already.
// Written beside its place and renamed into it: whichever of two concurrent writers renames second fails on
// the existing folder and drops its copy.
std::string ModelDirOnce(const std::string& name, const char* marker, MakeModelOptions options) {
  namespace fs = std::filesystem;
  const std::string dir = absl::StrCat(TestModelsDir(), "/", name);
  if (fs::exists(absl::StrCat(dir, "/", marker))) return dir;
  options.out_dir = absl::StrCat(dir, ".tmp-", getpid());
  const auto made = MakeModel(options);
  if (!made.ok()) std::fprintf(stderr, "test model %s: %s\n", name.c_str(), made.status().ToString().c_str());
  std::error_code ec;
  fs::rename(options.out_dir, dir, ec);
  if (ec) fs::remove_all(options.out_dir, ec);
  return dir;
}

}  // namespace

std::string SlowModelDir() {
  MakeModelOptions options;
  options.arch = "gpt2";
  options.preset = kPreset;
  options.dtype = "F16";
  options.write_adapter = true;
  return ModelDirOnce(absl::StrCat("gpt2-", kPreset, "-f16"), "preproj.safetensors", options);
}

absl::StatusOr<std::unique_ptr<Engine>> MakeTinyRandomEngine(const LoadModelOptions& load, const EngineConfig& config) {
  absl::StatusOr<ModelBundle> bundle = LoadModelBundle(TinyRandomModelDir(), load);
  if (!bundle.ok()) return bundle.status();
  return Engine::Create(std::move(*bundle), config);
}

bool SlowModelIsFullSize() { return std::string(kPreset) == "124m"; }

std::string TinyRandomModelDir() { return ModelDirOnce("gpt2-tiny-random", "config.json", MakeModelOptions{}); }

std::vector<std::string> SlowModelKvFlags(int blocks) {
  const std::string path = SlowModelDir() + "/config.json";
  const absl::StatusOr<std::string> text = ReadFileToString(path);
  const absl::StatusOr<ModelConfig> config = text.ok() ? ParseModelConfig(*text, path) : text.status();
  if (!config.ok()) {
    std::fprintf(stderr, "SlowModelKvFlags: %s\n", config.status().ToString().c_str());
    return {};
  }
  const int64_t bytes = int64_t{blocks} * 16 * config->num_layers * 2 * config->kv_size() * int64_t{sizeof(float)};
  return {"--kv_cache_dtype=f32", "--kv_cache_bytes=" + std::to_string(bytes)};
}

}  // namespace arach::testing
