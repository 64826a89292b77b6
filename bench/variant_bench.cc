// Cost of each model variant on one device: prefill throughput, and decode throughput at each decode batch size, of
// base, arach, skip and arach+skip and of a batch mixing the four, on a make-model preset (with a random adapter),
// the ratio of each to base, and the KV bytes per token each holds (ARACH's hub rows never enter the cache, so its
// figure equals base).
//
//   build/bench/variant_bench [--device cpu|cuda] [--preset gpt2/124m] [--prefill_batch 1] [--batches 1,8]
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "bench/throughput.h"
#include "tools/make_model/make_model.h"
#include "engine/bundle/model_bundle.h"


namespace arach::bench {
namespace {

int Run() {
  const absl::StatusOr<std::vector<int>> decode_batches = PositiveCounts("batches", absl::GetFlag(FLAGS_batches));
  if (!decode_batches.ok()) {
    std::fprintf(stderr, "%s\n", decode_batches.status().ToString().c_str());
    return 2;
  }
  const std::vector<std::string> parts = absl::StrSplit(absl::GetFlag(FLAGS_preset), '/');
  if (parts.size() != 2) {
    std::fprintf(stderr, "--preset must be ARCH/NAME\n");
    return 2;
  }
  const std::filesystem::path dir = std::filesystem::path(absl::GetFlag(FLAGS_scratch)) / (parts[0] + "-" + parts[1] + "-adapter");
  if (!std::filesystem::exists(dir / "preproj.safetensors")) {
    MakeModelOptions make;
    make.arch = parts[0];
    make.preset = parts[1];
    make.out_dir = dir.string();
    make.write_adapter = true;
    std::fprintf(stderr, "[bench] writing make-model %s with an adapter to %s\n", absl::GetFlag(FLAGS_preset).c_str(), dir.c_str());
    if (auto made = MakeModel(make); !made.ok()) {
      std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
      return 1;
    }
  }
  absl::StatusOr<LoadModelOptions> base_load = LoadOptionsFromFlags(/*read_device=*/true);
  if (!base_load.ok()) {
    std::fprintf(stderr, "%s\n", base_load.status().ToString().c_str());
    return 2;
  }
  const int prefill_batch = absl::GetFlag(FLAGS_prefill_batch);
  LoadModelOptions load = *base_load;
  load.adapter = (dir / "preproj.safetensors").string();
  load.default_kv_sequences = std::max(prefill_batch, *std::max_element(decode_batches->begin(), decode_batches->end()));
  auto model = LoadModelBundle(dir.string(), load);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const int len = absl::GetFlag(FLAGS_prompt_len), steps = absl::GetFlag(FLAGS_decode_steps), repeats = absl::GetFlag(FLAGS_repeats);
  std::printf("# variant_bench: %s (%s), %s; prompt %d, prefill batch %d, decode %d steps, median of %d\n",
              absl::GetFlag(FLAGS_preset).c_str(), dir.c_str(), model->runner->backend().Describe().c_str(), len,
              prefill_batch, steps, repeats);
  std::printf("%-11s %6s %14s %9s %14s %9s %14s %16s\n", "variant", "batch", "prefill tok/s", "vs base", "decode tok/s",
              "vs base", "decode ms/step", "KV bytes/token");
  // Each variant alone, then a mixed batch (an A/B experiment in one batch): sequence s runs the (s % 4)-th.
  const std::vector<Variant> all = {Variant{}, Variant{.arach = true}, Variant{.skip = true}, Variant{.arach = true, .skip = true}};
  const size_t num_kinds = all.size() + 1;  // the last: mixed
  const auto variants_of = [&all](size_t kind) { return kind == all.size() ? all : std::vector<Variant>{all[kind]}; };
  // Prefill does not depend on the decode batch: measured once per kind.
  std::vector<double> prefill(num_kinds);
  for (size_t kind = 0; kind < num_kinds; ++kind) {
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
      auto p = MeasureThroughput(*model->runner, prefill_batch, len, 1, variants_of(kind));
      if (!p.ok()) {
        std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
        return 1;
      }
      runs.push_back(p->prefill_tokens_per_s);
    }
    prefill[kind] = Median(runs);
  }
  for (int batch : *decode_batches) {
    double base_decode = 0;
    for (size_t kind = 0; kind < num_kinds; ++kind) {
      if (kind == all.size() && batch == 1) continue;  // one sequence is no mix
      std::vector<double> decode, ms, kv;
      for (int r = 0; r < repeats; ++r) {
        auto d = MeasureThroughput(*model->runner, batch, len, steps, variants_of(kind));
        if (!d.ok()) {
          std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
          return 1;
        }
        decode.push_back(d->decode_tokens_per_s);
        ms.push_back(d->decode_ms_per_step);
        kv.push_back(d->kv_bytes_per_token);
      }
      if (kind == 0) base_decode = Median(decode);
      const std::string name = kind == all.size() ? "mixed" : all[kind].Name();
      std::printf("%-11s %6d %14.0f %8.2fx %14.1f %8.2fx %14.2f %16.0f\n", name.c_str(), batch, prefill[kind],
                  prefill[kind] / prefill[0], Median(decode), Median(decode) / base_decode, Median(ms), Median(kv));
      std::fflush(stdout);
    }
  }
  PrintStepGraphStats(absl::GetFlag(FLAGS_preset), *model->runner);
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) { return arach::bench::BenchmarkMain(argc, argv, {"variant_bench", "cost of each variant against base", arach::bench::kVariantBenchFlags}, arach::bench::Run); }
