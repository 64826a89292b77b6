#include "bench/bench_util.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cmdline/flag_names.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_flags.h"
#include "absl/strings/str_split.h"
#include "engine/backend/cpu/openblas_setup.h"
#include "engine/core/status.h"
#include "tools/make_model/make_model.h"

namespace arach::bench {

int BenchmarkMain(int argc, char** argv, const cmdline::Subcommand& benchmark, int (*run)()) {
  RestartWithOpenBlasCoreTypeIfNeeded(argv);
  std::vector<std::string> storage;
  std::vector<char*> args = cmdline::NormalizeFlagNames(argc, argv, storage);
  const cmdline::SubcommandStart start = cmdline::StartSingleCommand(benchmark, argc, args.data());  // args ends in a null
  if (start.command == nullptr) return start.exit_status;
  return run();
}

absl::StatusOr<std::string> ModelFolderFromFlags() {
  if (!absl::GetFlag(FLAGS_model).empty()) return absl::GetFlag(FLAGS_model);
  ARACH_ASSIGN_OR_RETURN(std::vector<std::string> models,
                         ResolveModels({}, {}, "", {absl::GetFlag(FLAGS_preset)}, absl::GetFlag(FLAGS_scratch)));
  return models.front();
}

absl::StatusOr<LoadModelOptions> LoadOptionsFromFlags(bool read_device) {
  LoadModelOptions load;
  if (read_device) {
    absl::StatusOr<DeviceKind> device = ParseDeviceKind(absl::GetFlag(FLAGS_device));
    if (!device.ok()) return absl::InvalidArgumentError(absl::StrCat("--device: ", device.status().message()));
    load.device = *device;
  }
  ARACH_RETURN_IF_ERROR(ParseStorageDTypeFlags(absl::GetFlag(FLAGS_weight_dtype), absl::GetFlag(FLAGS_kv_cache_dtype), load));
  return load;
}

absl::StatusOr<std::vector<std::string>> ResolveModels(const std::vector<std::string>& dirs,
                                                       const std::vector<std::string>& fixtures,
                                                       const std::string& fixtures_dir,
                                                       const std::vector<std::string>& presets,
                                                       const std::string& scratch_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out = dirs;
  for (const std::string& name : fixtures) {
    const fs::path dir = fs::path(fixtures_dir) / name;
    if (fs::exists(dir / "config.json")) {
      out.push_back(dir.string());
    } else {
      std::fprintf(stderr, "[bench] fixture %s not found under %s; skipped\n", name.c_str(), fixtures_dir.c_str());
    }
  }
  for (const std::string& preset : presets) {
    const std::vector<std::string> parts = absl::StrSplit(preset, '/');
    if (parts.size() != 2) return absl::InvalidArgumentError(absl::StrCat("preset \"", preset, "\" is not ARCH/NAME"));
    const fs::path dir = fs::path(scratch_dir) / absl::StrCat(parts[0], "-", parts[1]);
    if (!fs::exists(dir / "config.json")) {
      std::fprintf(stderr, "[bench] writing make-model %s to %s\n", preset.c_str(), dir.c_str());
      MakeModelOptions options;
      options.arch = parts[0];
      options.preset = parts[1];
      options.out_dir = dir.string();
      ARACH_RETURN_IF_ERROR(MakeModel(options).status());
    }
    out.push_back(dir.string());
  }
  return out;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void PrintStepGraphStats(const std::string& label, const ModelRunner& runner) {
  if (!runner.backend().records_step_graphs()) return;
  const ModelRunner::StepGraphStats& graphs = runner.step_graph_stats();
  std::printf("# %s: step graphs recorded %lld, replayed %lld\n", label.c_str(), static_cast<long long>(graphs.recorded),
              static_cast<long long>(graphs.replayed));
}

absl::StatusOr<std::vector<int>> PositiveCounts(const std::string& flag, const std::vector<std::string>& values) {
  std::vector<int> counts;
  for (const std::string& value : values) {
    int count = 0;
    if (!absl::SimpleAtoi(value, &count) || count <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", value, "' is not a positive count"));
    }
    counts.push_back(count);
  }
  if (counts.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": give at least one count"));
  return counts;
}

}  // namespace arach::bench
