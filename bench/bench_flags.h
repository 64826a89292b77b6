// Every benchmark's flags, defined once (bench_flags.cc); each benchmark names the ones it reads
// (kForwardBenchFlags, ...) and BenchmarkMain refuses a flag of another benchmark, naming both, instead of
// ignoring it.
#pragma once

#include <string>
#include <vector>

#include "absl/flags/declare.h"

// Models.
ABSL_DECLARE_FLAG(std::vector<std::string>, models);
ABSL_DECLARE_FLAG(std::vector<std::string>, fixtures);
ABSL_DECLARE_FLAG(std::vector<std::string>, tokenizers);
ABSL_DECLARE_FLAG(std::string, fixtures_dir);
ABSL_DECLARE_FLAG(std::vector<std::string>, presets);
ABSL_DECLARE_FLAG(std::string, preset);
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, scratch);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, weight_dtype);
ABSL_DECLARE_FLAG(std::string, kv_cache_dtype);
// Shapes and repetitions.
ABSL_DECLARE_FLAG(std::vector<std::string>, batches);
ABSL_DECLARE_FLAG(int, prompt_len);
ABSL_DECLARE_FLAG(int, decode_steps);
ABSL_DECLARE_FLAG(int, repeats);
ABSL_DECLARE_FLAG(int, prefill_batch);
// The serving engine's load.
ABSL_DECLARE_FLAG(std::vector<std::string>, concurrency);
ABSL_DECLARE_FLAG(int, requests_per_client);
ABSL_DECLARE_FLAG(int, max_tokens);
ABSL_DECLARE_FLAG(std::string, variant);
ABSL_DECLARE_FLAG(int, max_num_batched_tokens);
ABSL_DECLARE_FLAG(std::string, json_schema);
ABSL_DECLARE_FLAG(int, shared_prefix);
ABSL_DECLARE_FLAG(bool, score);
ABSL_DECLARE_FLAG(bool, embed);
ABSL_DECLARE_FLAG(std::string, pooling);
ABSL_DECLARE_FLAG(int, lora_rank);
ABSL_DECLARE_FLAG(int, lora_adapters);
ABSL_DECLARE_FLAG(int, lora_slots);
ABSL_DECLARE_FLAG(bool, predict);
ABSL_DECLARE_FLAG(int, prediction_edits);
ABSL_DECLARE_FLAG(int, prediction_draft_tokens);
ABSL_DECLARE_FLAG(int, prompt_lookup_tokens);
ABSL_DECLARE_FLAG(int, speculative_disable_by_batch_size);
ABSL_DECLARE_FLAG(int, prompt_top_logprobs);
ABSL_DECLARE_FLAG(float, temperature);
ABSL_DECLARE_FLAG(int, top_k);
ABSL_DECLARE_FLAG(float, top_p);
// The host's scoring and sampling.
ABSL_DECLARE_FLAG(int, vocab);
ABSL_DECLARE_FLAG(int, rows);
// Structured output.
ABSL_DECLARE_FLAG(int, schemas);
ABSL_DECLARE_FLAG(int, steps);
ABSL_DECLARE_FLAG(std::vector<std::string>, contexts);

namespace arach::bench {

// The flags each benchmark reads.
inline const std::vector<std::string> kForwardBenchFlags = {"models", "fixtures", "fixtures_dir", "presets", "scratch", "batches",
                                                            "prompt_len", "decode_steps", "repeats", "device", "weight_dtype", "kv_cache_dtype"};
inline const std::vector<std::string> kVariantBenchFlags = {"preset", "scratch", "prompt_len", "prefill_batch", "batches",
                                                            "decode_steps", "repeats", "device", "weight_dtype", "kv_cache_dtype"};
inline const std::vector<std::string> kEngineBenchFlags = {"preset", "model", "scratch", "device", "concurrency", "requests_per_client",
                                                           "prompt_len", "max_tokens", "variant", "max_num_batched_tokens",
                                                           "json_schema", "weight_dtype", "kv_cache_dtype", "shared_prefix", "score", "embed", "pooling",
                                                           "predict", "prediction_edits", "prediction_draft_tokens", "prompt_lookup_tokens",
                                                           "speculative_disable_by_batch_size", "prompt_top_logprobs", "temperature", "top_k", "top_p",
                                                           "lora_rank", "lora_adapters", "lora_slots"};
inline const std::vector<std::string> kSamplingBenchFlags = {"vocab", "rows", "repeats"};
inline const std::vector<std::string> kDraftLookupBenchFlags = {"vocab", "contexts", "steps", "repeats"};
inline const std::vector<std::string> kTokenizerBenchFlags = {"tokenizers", "fixtures_dir", "repeats"};
inline const std::vector<std::string> kConstraintBenchFlags = {"preset", "model", "scratch", "json_schema", "schemas", "steps"};

}  // namespace arach::bench
