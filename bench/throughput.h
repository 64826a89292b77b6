// One throughput measurement on a ModelRunner: prefill `batch` sequences of `prompt_len` tokens, then
// decode `steps` tokens each; sequence s runs variants[s % variants.size()] (one variant, or a mixed batch).
#pragma once

#include <span>

#include "absl/status/statusor.h"
#include "engine/variant/variant.h"
#include "engine/runner/model_runner.h"

namespace arach::bench {

struct ThroughputFigures {
  double prefill_tokens_per_s = 0;
  double decode_ms_per_step = 0;
  double decode_tokens_per_s = 0;
  double kv_bytes_per_token = 0;  // KV blocks held after prefill x bytes per block / tokens cached
};

absl::StatusOr<ThroughputFigures> MeasureThroughput(ModelRunner& runner, int batch, int prompt_len, int steps,
                                                    std::span<const Variant> variants);

}  // namespace arach::bench
