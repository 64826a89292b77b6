#include "bench/throughput.h"

#include <chrono>

#include "bench/bench_util.h"
#include "engine/core/status.h"

namespace arach::bench {

absl::StatusOr<ThroughputFigures> MeasureThroughput(ModelRunner& runner, int batch, int prompt_len, int steps,
                                                    std::span<const Variant> variants) {
  if (variants.empty()) return absl::InvalidArgumentError("MeasureThroughput: no variant");
  const ModelConfig& c = runner.config();
  const auto variant_of = [&variants](int s) { return variants[s % variants.size()]; };
  BlockAllocator allocator(runner.kv_cache().num_blocks());
  std::vector<BlockTable> tables(batch, BlockTable(runner.kv_cache().block_size()));
  std::vector<std::vector<int32_t>> tokens(batch);
  for (int s = 0; s < batch; ++s) {
    for (int i = 0; i < prompt_len; ++i) tokens[s].push_back((s * 7919 + i * 104729) % c.vocab_size);
    ARACH_RETURN_IF_ERROR(tables[s].Reserve(prompt_len, allocator));
  }
  ThroughputFigures f;
  ForwardOutput output;  // reused by every step, as the engine does
  ForwardBatch prefill;
  for (int s = 0; s < batch; ++s) prefill.sequences.push_back({tokens[s], 0, &tables[s], LogitsMode::kLast, variant_of(s)});
  const auto t0 = std::chrono::steady_clock::now();
  ARACH_RETURN_IF_ERROR(runner.Execute(prefill, output));
  f.prefill_tokens_per_s = batch * prompt_len / Seconds(t0);
  const int blocks_held = allocator.num_blocks() - allocator.num_free();
  f.kv_bytes_per_token = static_cast<double>(blocks_held) *
                         KvCache::BytesPerBlock(c, runner.kv_cache().block_size(), runner.backend().kv_cache_dtype()) /
                         (batch * prompt_len);

  std::vector<int32_t> next(batch, 1);
  const auto t1 = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    ForwardBatch decode;
    for (int s = 0; s < batch; ++s) {
      ARACH_RETURN_IF_ERROR(tables[s].Reserve(prompt_len + step + 1, allocator));
      decode.sequences.push_back({std::span<const int32_t>(&next[s], 1), prompt_len + step, &tables[s], LogitsMode::kLast, variant_of(s)});
    }
    ARACH_RETURN_IF_ERROR(runner.Execute(decode, output));
    for (int s = 0; s < batch; ++s) next[s] = (next[s] * 31 + step) % c.vocab_size;
  }
  const double seconds = Seconds(t1);
  f.decode_ms_per_step = 1e3 * seconds / steps;
  f.decode_tokens_per_s = batch * steps / seconds;
  for (BlockTable& t : tables) t.ReleaseAll(allocator);
  return f;
}

}  // namespace arach::bench
