// Forward throughput on one device: prefill tokens/s and decode ms/step + tokens/s at several batch sizes,
// for the fixture models and make-model presets, and the memory bandwidth a decode step achieves (weights
// plus the KV cache it reads, over the step time). Prints one table; figures, not pass/fail.
//
//   build/bench/forward_bench [--device cpu|cuda] [--presets gpt2/124m] [--batches 1,8] [--prompt_len 128]
//                             [--decode_steps 32]
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "absl/flags/flag.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "bench/throughput.h"
#include "engine/bundle/model_bundle.h"


namespace arach::bench {
namespace {

int Run() {
  const absl::StatusOr<std::vector<int>> batch_sizes = PositiveCounts("batches", absl::GetFlag(FLAGS_batches));
  if (!batch_sizes.ok()) {
    std::fprintf(stderr, "%s\n", batch_sizes.status().ToString().c_str());
    return 2;
  }
  const std::vector<int>& batches = *batch_sizes;
  auto models = ResolveModels(absl::GetFlag(FLAGS_models), absl::GetFlag(FLAGS_fixtures), absl::GetFlag(FLAGS_fixtures_dir),
                              absl::GetFlag(FLAGS_presets), absl::GetFlag(FLAGS_scratch));
  if (!models.ok()) {
    std::fprintf(stderr, "%s\n", models.status().ToString().c_str());
    return 1;
  }
  const int prompt_len = absl::GetFlag(FLAGS_prompt_len), steps = absl::GetFlag(FLAGS_decode_steps);
  absl::StatusOr<LoadModelOptions> base_load = LoadOptionsFromFlags(/*read_device=*/true);
  if (!base_load.ok()) {
    std::fprintf(stderr, "%s\n", base_load.status().ToString().c_str());
    return 2;
  }
  bool printed_header = false;
  for (const std::string& dir : *models) {
    LoadModelOptions load = *base_load;
    load.default_kv_sequences = *std::max_element(batches.begin(), batches.end());
    auto model = LoadModelBundle(dir, load);
    if (!model.ok()) {
      std::fprintf(stderr, "%s: %s\n", dir.c_str(), model.status().ToString().c_str());
      return 1;
    }
    if (!printed_header) {
      std::printf("# forward_bench on %s; prompt %d tokens, %d decode steps, median of %d\n",
                  model->runner->backend().Describe().c_str(), prompt_len, steps, absl::GetFlag(FLAGS_repeats));
      std::printf("%-28s %8s %6s %16s %16s %16s %14s\n", "model", "params", "batch", "prefill tok/s", "decode ms/step",
                  "decode tok/s", "decode GB/s");
      printed_header = true;
    }
    const double weight_bytes = static_cast<double>(model->runner->weight_bytes());
    const double params = weight_bytes / DTypeSize(model->runner->backend().weight_dtype()) / 1e6;  // (norms: a rounding error)
    const int len = std::min(prompt_len, model->config.max_positions - steps);
    for (int batch : batches) {
      std::vector<double> prefill, ms, tps, bandwidth;
      for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
        auto f = MeasureThroughput(*model->runner, batch, len, steps, std::vector<Variant>{Variant{}});
        if (!f.ok()) {
          std::fprintf(stderr, "%s: %s\n", dir.c_str(), f.status().ToString().c_str());
          return 1;
        }
        prefill.push_back(f->prefill_tokens_per_s);
        ms.push_back(f->decode_ms_per_step);
        tps.push_back(f->decode_tokens_per_s);
        // A decode step reads every weight once and each sequence's cached keys/values (mean context).
        const double kv_read = static_cast<double>(batch) * (len + steps / 2.0) * f->kv_bytes_per_token;
        bandwidth.push_back((weight_bytes + kv_read) / (f->decode_ms_per_step * 1e-3) / 1e9);
      }
      std::printf("%-28s %7.1fM %6d %16.0f %16.3f %16.1f %14.1f\n", std::filesystem::path(dir).filename().c_str(), params,
                  batch, Median(prefill), Median(ms), Median(tps), Median(bandwidth));
      std::fflush(stdout);
    }
    PrintStepGraphStats(std::filesystem::path(dir).filename().string(), *model->runner);
  }
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) { return arach::bench::BenchmarkMain(argc, argv, {"forward_bench", "forward throughput per device", arach::bench::kForwardBenchFlags}, arach::bench::Run); }
