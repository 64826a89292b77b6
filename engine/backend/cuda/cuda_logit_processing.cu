// The sampler's logit processors on the GPU, one block per row, in the CPU sampler's order (ApplyLogitProcessors
// in engine/sampling/sampler.h, the reference of its tests): logit bias, repetition penalty, presence and
// frequency penalties, the structured-output mask, min_tokens suppression of stop tokens unless that would leave
// nothing, from the raw logits into `processed` (which may be the same memory). The host has packed each row's lists (logit_processing.h), every token in a list once, so the threads
// of a phase never touch the same logit; a barrier separates the phases.
#include <cmath>

#include "engine/backend/cuda/cuda_common.cuh"
#include "engine/backend/cuda/cuda_kernels.h"

namespace arach::cuda {
namespace {

constexpr int kLogitThreads = 256;

__global__ void __launch_bounds__(kLogitThreads) ProcessLogitsKernel(LogitProcessingArgs a, const float* logits, float* processed) {
  __shared__ float shared[32];
  const int r = blockIdx.x;
  const float* raw = logits + static_cast<int64_t>(r) * a.vocab;
  float* row = processed + static_cast<int64_t>(r) * a.vocab;
  const float masked = -INFINITY;

  for (int t = threadIdx.x; t < a.vocab; t += blockDim.x) row[t] = raw[t];
  __syncthreads();
  for (int i = a.bias_start[r] + threadIdx.x; i < a.bias_start[r + 1]; i += blockDim.x) row[a.bias_token[i]] += a.bias_value[i];
  __syncthreads();
  const float penalty = a.repetition_penalty[r];
  for (int i = a.repeated_start[r] + threadIdx.x; i < a.repeated_start[r + 1]; i += blockDim.x) {
    float& w = row[a.repeated_token[i]];
    w = w > 0.0f ? w / penalty : w * penalty;
  }
  __syncthreads();
  const float presence = a.presence_penalty[r], frequency = a.frequency_penalty[r];
  for (int i = a.generated_start[r] + threadIdx.x; i < a.generated_start[r + 1]; i += blockDim.x) {
    row[a.generated_token[i]] -= frequency * static_cast<float>(a.generated_count[i]) + presence;
  }
  __syncthreads();
  const int first_word = a.allowed_word_start[r], words = a.allowed_word_start[r + 1] - first_word;
  if (words > 0) {
    const uint32_t* allowed = a.allowed_words + first_word;
    for (int t = threadIdx.x; t < a.vocab; t += blockDim.x) {
      const bool ok = t / 32 < words && ((allowed[t / 32] >> (t % 32)) & 1u) != 0;
      if (!ok) row[t] = masked;
    }
  }
  __syncthreads();
  const int first_stop = a.suppressed_start[r], stops = a.suppressed_start[r + 1] - first_stop;
  if (stops == 0) return;  // the same for every thread of the block
  float live = 0.0f, live_stops = 0.0f;  // tokens not masked, in all and among the stop tokens (counts < 2^24)
  for (int t = threadIdx.x; t < a.vocab; t += blockDim.x) live += row[t] != masked ? 1.0f : 0.0f;
  for (int i = threadIdx.x; i < stops; i += blockDim.x) live_stops += row[a.suppressed_token[first_stop + i]] != masked ? 1.0f : 0.0f;
  live = BlockSum(live, shared);
  live_stops = BlockSum(live_stops, shared);
  if (live - live_stops <= 0.0f) return;  // suppressing them would leave nothing: the constraint wins
  for (int i = threadIdx.x; i < stops; i += blockDim.x) row[a.suppressed_token[first_stop + i]] = masked;
}

}  // namespace

void LaunchProcessLogits(const LogitProcessingArgs& args, const float* logits, float* processed, cudaStream_t stream) {
  if (args.rows == 0) return;
  ARACH_LAUNCH(ProcessLogitsKernel, static_cast<unsigned>(args.rows), kLogitThreads, 0, stream)(args, logits, processed);
}

}  // namespace arach::cuda
