// Helpers shared by the benchmarks: wall-clock timing and model folders (fixtures or make-model presets).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmdline/subcommands.h"
#include "engine/bundle/model_bundle.h"

namespace arach::bench {

inline double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Model folders to benchmark: the given list, the fixtures that exist under `fixtures_dir`, and each
// make-model preset ("arch/preset") written once into `scratch_dir` (reused on later runs).
absl::StatusOr<std::vector<std::string>> ResolveModels(const std::vector<std::string>& dirs,
                                                       const std::vector<std::string>& fixtures,
                                                       const std::string& fixtures_dir,
                                                       const std::vector<std::string>& presets,
                                                       const std::string& scratch_dir);

// The one model folder of a benchmark that reads --model, else --preset written under --scratch.
absl::StatusOr<std::string> ModelFolderFromFlags();

// Load options from --device (where the benchmark reads it) and --weight_dtype.
absl::StatusOr<LoadModelOptions> LoadOptionsFromFlags(bool read_device);

double Median(std::vector<double> values);

// Where the runner's backend records step graphs: a line saying how many decode-step shapes `label`'s runs recorded
// and how many steps ran as one replayed graph launch.
void PrintStepGraphStats(const std::string& label, const ModelRunner& runner);

// A list flag of positive counts (--batches, --concurrency): INVALID_ARGUMENT naming `flag` and the entry that is
// not one, or the flag when the list is empty.
absl::StatusOr<std::vector<int>> PositiveCounts(const std::string& flag, const std::vector<std::string>& values);

// The main of every benchmark: restarts once with a fast OpenBLAS kernel, prints --help for `benchmark`'s
// flags (bench_flags.h) or refuses a flag it does not read (exit 2), parses the flags, runs `run`.
int BenchmarkMain(int argc, char** argv, const cmdline::Subcommand& benchmark, int (*run)());

}  // namespace arach::bench
