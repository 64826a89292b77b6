// Cost of each model variant on one device: prefill and decode throughput of base, arach, skip and arach+skip,
// and of a batch mixing the four, on a make-model preset (with a random adapter), the ratio of each to base, and
// the KV bytes per token each holds (ARACH's hub rows never enter the cache, so its figure equals base).
//
//   build/bench/variant_bench [--device cpu|cuda] [--preset gpt2/124m] [--prefill_batch 1] [--decode_batch 8]
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
  LoadModelOptions load = *base_load;
  load.adapter = (dir / "preproj.safetensors").string();
  load.default_kv_sequences = std::max(absl::GetFlag(FLAGS_prefill_batch), absl::GetFlag(FLAGS_decode_batch));
  auto model = LoadModelBundle(dir.string(), load);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const int len = absl::GetFlag(FLAGS_prompt_len), steps = absl::GetFlag(FLAGS_decode_steps);
  std::printf("# variant_bench: %s (%s), %s; prompt %d, prefill batch %d, decode batch %d x %d steps, median of %d\n",
              absl::GetFlag(FLAGS_preset).c_str(), dir.c_str(), model->runner->backend().Describe().c_str(), len,
              absl::GetFlag(FLAGS_prefill_batch), absl::GetFlag(FLAGS_decode_batch), steps, absl::GetFlag(FLAGS_repeats));
  std::printf("%-11s %14s %9s %14s %9s %14s %16s\n", "variant", "prefill tok/s", "vs base", "decode tok/s", "vs base",
              "decode ms/step", "KV bytes/token");
  double base_prefill = 0, base_decode = 0;
  // Each variant alone, then a mixed batch (an A/B experiment in one batch): sequence s runs the (s % 4)-th.
  const std::vector<Variant> all = {Variant{}, Variant{.arach = true}, Variant{.skip = true}, Variant{.arach = true, .skip = true}};
  for (size_t v = 0; v <= all.size(); ++v) {
    const bool mixed = v == all.size();
    const std::vector<Variant> variants = mixed ? all : std::vector<Variant>{all[v]};
    const std::string name = mixed ? "mixed" : all[v].Name();
    std::vector<double> prefill, decode, ms, kv;
    for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
      auto p = MeasureThroughput(*model->runner, absl::GetFlag(FLAGS_prefill_batch), len, 1, variants);
      auto d = MeasureThroughput(*model->runner, absl::GetFlag(FLAGS_decode_batch), len, steps, variants);
      if (!p.ok() || !d.ok()) {
        std::fprintf(stderr, "%s\n", (p.ok() ? d.status() : p.status()).ToString().c_str());
        return 1;
      }
      prefill.push_back(p->prefill_tokens_per_s);
      decode.push_back(d->decode_tokens_per_s);
      ms.push_back(d->decode_ms_per_step);
      kv.push_back(d->kv_bytes_per_token);
    }
    if (name == "base") {
      base_prefill = Median(prefill);
      base_decode = Median(decode);
    }
    std::printf("%-11s %14.0f %8.2fx %14.1f %8.2fx %14.2f %16.0f\n", name.c_str(), Median(prefill), Median(prefill) / base_prefill,
                Median(decode), Median(decode) / base_decode, Median(ms), Median(kv));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) { return arach::bench::BenchmarkMain(argc, argv, {"variant_bench", "cost of each variant against base", arach::bench::kVariantBenchFlags}, arach::bench::Run); }
