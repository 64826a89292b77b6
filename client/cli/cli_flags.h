// Flags shared by the arach-cli subcommands (defined in main.cc).
#pragma once

#include <string>
#include <vector>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(std::string, prompt);
ABSL_DECLARE_FLAG(std::string, ids);
ABSL_DECLARE_FLAG(std::string, text);
ABSL_DECLARE_FLAG(std::string, file);
ABSL_DECLARE_FLAG(int, max_tokens);
ABSL_DECLARE_FLAG(int, min_tokens);
ABSL_DECLARE_FLAG(double, temperature);
ABSL_DECLARE_FLAG(int, top_k);
ABSL_DECLARE_FLAG(double, top_p);
ABSL_DECLARE_FLAG(double, min_p);
ABSL_DECLARE_FLAG(double, repetition_penalty);
ABSL_DECLARE_FLAG(int64_t, seed);
ABSL_DECLARE_FLAG(std::vector<std::string>, stop);
ABSL_DECLARE_FLAG(bool, ignore_eos);
ABSL_DECLARE_FLAG(int, top_logprobs);
ABSL_DECLARE_FLAG(std::string, variant);
ABSL_DECLARE_FLAG(double, arach_offset);
ABSL_DECLARE_FLAG(std::string, experiment_key);
ABSL_DECLARE_FLAG(double, timeout);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(double, rate);
ABSL_DECLARE_FLAG(int, concurrency);
ABSL_DECLARE_FLAG(int, num_requests);
ABSL_DECLARE_FLAG(std::string, prompt_len);
ABSL_DECLARE_FLAG(std::string, output_len);
ABSL_DECLARE_FLAG(std::string, variant_mix);
ABSL_DECLARE_FLAG(uint64_t, bench_seed);
