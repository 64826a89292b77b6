// The argument checks of every backend op, written once for all devices (the CTranslate2 pattern: an op's
// checks in one place, its kernels per device). Backend's entry points run them before the device kernel;
// ModelRunner::Create runs CheckAttentionHeadDim at load, so an unsupported model fails before serving.
// Each returns INTERNAL naming the op and the mismatching shapes (a caller bug, never user input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "engine/backend/attention_params.h"
#include "engine/backend/device_matrix.h"
#include "engine/sampling/sampler.h"

namespace arach::op_checks {

absl::Status CheckEmbed(const DeviceMatrix& table, const DeviceMatrix& position_table, const DeviceMatrix& out);
absl::Status CheckNorm(const char* op, const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                       const DeviceMatrix& out);
absl::Status CheckNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight);
absl::Status CheckLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out);
absl::Status CheckRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim);
absl::Status CheckGatedActivate(const DeviceMatrix& in, const DeviceMatrix& out);
absl::Status CheckSameShape(const char* op, const DeviceMatrix& a, const DeviceMatrix& b);
absl::Status CheckWriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const PagedKvLayer& kv);
// `max_head_dim`: the device's limit (Backend::max_attention_head_dim).
absl::Status CheckAttention(const AttentionParams& params, int max_head_dim);
absl::Status CheckAttentionHeadDim(int head_dim, int max_head_dim);
absl::Status CheckRowCopy(const char* op, const DeviceMatrix& src, const DeviceMatrix& dst);
// Backend::SumRows: at least one row in, one float32 row of as many columns out.
absl::Status CheckSumRows(const DeviceMatrix& src, const DeviceMatrix& sum);
// Backend::SampleTokens: dense float32 logits with one row per sampled row, one token slot each (and one log-prob
// slot each, or none); every row has parameters.
absl::Status CheckSampleTokens(const DeviceMatrix& logits, std::span<const SamplerInput> rows, size_t tokens, size_t logprobs);
// Backend::ScoreRows: dense float32 logits with one row per target and one score slot each; every target below
// the vocabulary; the same number of alternative slots for every row, at most the vocabulary.
absl::Status CheckScoreRows(const DeviceMatrix& logits, std::span<const int32_t> targets, size_t scores, size_t top);

}  // namespace arach::op_checks
