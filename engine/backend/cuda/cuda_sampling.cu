// The GPU's sampling pipeline (device_sampling.h): the logit processors, FlashInfer's softmax and top-k / top-p
// renormalisations for the rows that sample, then our draw (min-p and the counter-keyed inverse CDF in token-id
// order, the CPU sampler's rule) or the argmax of greedy rows. And the scoring of rows against their targets.
#include <cmath>
#include <string>
#include <utility>

#include "engine/backend/cuda/cuda_common.cuh"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/sampling_args.h"
#include "engine/backend/cuda/flashinfer_kernels.h"
#include "engine/core/random.h"

namespace arach::cuda {
namespace {

constexpr int kThreads = 256;

// The largest of each thread's `value` over the block; every thread gets it. `shared`: [kThreads].
__device__ float BlockMax(float value, float* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int u = 1; u < kThreads; ++u) shared[0] = fmaxf(shared[0], shared[u]);
  }
  __syncthreads();
  const float result = shared[0];
  __syncthreads();  // `shared` is free again
  return result;
}

// One block per row; thread t owns the tokens [t * chunk, (t + 1) * chunk), so that sums over the threads in
// order are sums in token-id order.
__global__ void __launch_bounds__(kThreads) DrawTokensKernel(SamplingArgs a, const float* probs) {
  __shared__ double kept_mass[kThreads];  // per thread, then its exclusive prefix
  __shared__ float values[kThreads];
  __shared__ int indices[kThreads];       // each thread's argmax, or its last kept token
  __shared__ double target;
  __shared__ int chosen;
  const int r = blockIdx.x, t = threadIdx.x, vocab = a.processing.vocab;
  const int chunk = (vocab + kThreads - 1) / kThreads;
  const int begin = min(vocab, t * chunk), end = min(vocab, begin + chunk);

  if (a.greedy[r] != 0) {  // the same branch for the whole block
    const float* row = a.processed + static_cast<int64_t>(r) * vocab;
    float best = -INFINITY;
    int index = -1;
    for (int i = begin; i < end; ++i) {
      if (index < 0 || row[i] > best) {  // the first maximum: the lowest id, as the CPU's max_element
        best = row[i];
        index = i;
      }
    }
    values[t] = best;
    indices[t] = index;
    __syncthreads();
    if (t == 0) {
      int pick = -1;
      float top = -INFINITY;
      for (int u = 0; u < kThreads; ++u) {
        if (indices[u] >= 0 && (pick < 0 || values[u] > top)) {
          top = values[u];
          pick = indices[u];
        }
      }
      chosen = max(pick, 0);
    }
  } else {
    const float* p = probs + static_cast<int64_t>(r) * vocab;
    float top = 0.0f;
    for (int i = begin; i < end; ++i) top = fmaxf(top, p[i]);
    const float floor = a.min_p[r] * BlockMax(top, values);  // min-p: tokens below this share of the most likely go
    double mass = 0.0;
    int last = -1;
    for (int i = begin; i < end; ++i) {
      if (p[i] > 0.0f && p[i] >= floor) {
        mass += p[i];
        last = i;
      }
    }
    kept_mass[t] = mass;
    indices[t] = last;
    __syncthreads();
    if (t == 0) {
      double total = 0.0;
      for (int u = 0; u < kThreads; ++u) {
        const double own = kept_mass[u];
        kept_mass[u] = total;
        total += own;
      }
      target = CounterUniform(a.seed[r], a.counter[r]) * total;
      chosen = -1;
    }
    __syncthreads();
    // The one thread whose share of the cumulative mass holds the target walks its tokens.
    if (kept_mass[t] <= target && target < kept_mass[t] + mass) {
      double cumulative = kept_mass[t];
      int pick = last;
      for (int i = begin; i < end; ++i) {
        if (p[i] > 0.0f && p[i] >= floor) {
          cumulative += p[i];
          if (cumulative > target) {
            pick = i;
            break;
          }
        }
      }
      chosen = pick;
    }
    __syncthreads();
    if (t == 0) {
      int pick = chosen;
      for (int u = kThreads - 1; u >= 0 && pick < 0; --u) pick = indices[u];  // rounding put the target past the end
      chosen = max(pick, 0);
    }
  }
  __syncthreads();
  if (t == 0) a.tokens[r] = chosen;
  if (a.logprobs == nullptr) return;  // the same for the whole block
  // The picked token's log-prob under the model's own distribution: log-softmax of the unprocessed logits.
  const float* raw = a.logits + static_cast<int64_t>(r) * vocab;
  float local_max = -INFINITY;
  for (int i = begin; i < end; ++i) local_max = fmaxf(local_max, raw[i]);
  const float row_max = BlockMax(local_max, values);
  double sum = 0.0;
  for (int i = begin; i < end; ++i) sum += exp(static_cast<double>(raw[i]) - row_max);
  kept_mass[t] = sum;
  __syncthreads();
  if (t == 0) {
    double total = 0.0;
    for (int u = 0; u < kThreads; ++u) total += kept_mass[u];
    a.logprobs[r] = static_cast<float>(static_cast<double>(raw[chosen]) - row_max - log(total));
  }
}

// The most likely token of the row ([vocab]) among those after (after_value, after_index) in the order (logit
// descending, id ascending), with its logit. Thread t reads tokens t, t + kThreads, ... (a warp's reads coalesce).
// (+inf, -1) admits every token but NaNs. Every thread gets the result; `values`, `indices`: [kThreads] scratch.
__device__ void NextMostLikely(const float* row, int vocab, float after_value, int after_index, float* values, int* indices,
                               float& value, int& index) {
  float best = -INFINITY;
  int found = -1;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = row[i];
    const bool after = v < after_value || (v == after_value && i > after_index);
    if (after && (v > best || (found < 0 && v >= best))) {  // ids ascend: the first of equals is the lowest id
      best = v;
      found = i;
    }
  }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = found;
  __syncthreads();
  if (threadIdx.x == 0) {
    int pick = -1;
    float top = -INFINITY;
    for (int u = 0; u < kThreads; ++u) {
      if (indices[u] >= 0 && (pick < 0 || values[u] > top || (values[u] == top && indices[u] < pick))) {
        top = values[u];
        pick = indices[u];
      }
    }
    values[0] = top;
    indices[0] = pick;
  }
  __syncthreads();
  value = values[0];
  index = indices[0];
  __syncthreads();  // the scratch is free again
}

// One block per row: the row's first maximum, its log-sum-exp (double sums, as the host's), how many logits exceed
// the target's, and the top_n most likely tokens (one pass over the row each: n <= 20 where the engine asks).
__global__ void __launch_bounds__(kThreads) ScoreRowsKernel(ScoringArgs a) {
  __shared__ double sums[kThreads];
  __shared__ float values[kThreads];
  __shared__ int indices[kThreads];
  __shared__ int above[kThreads];
  __shared__ double log_z;
  const int r = blockIdx.x, t = threadIdx.x, vocab = a.vocab, n = a.top_n;
  const float* row = a.logits + static_cast<int64_t>(r) * vocab;

  float row_max = -INFINITY;
  int argmax = -1;
  NextMostLikely(row, vocab, INFINITY, -1, values, indices, row_max, argmax);
  argmax = max(argmax, 0);
  const int target = a.targets[r];
  if (t == 0) {
    a.argmax[r] = argmax;
    a.ranks[r] = 0;
    a.logprobs[r] = 0.0f;
  }
  if (target < 0 && n == 0) return;  // the same branch for the whole block
  const float target_value = target >= 0 ? row[target] : NAN;  // NaN: nothing above it counted
  double sum = 0.0;
  int count = 0;
  for (int i = t; i < vocab; i += kThreads) {
    sum += exp(static_cast<double>(row[i]) - row_max);
    count += row[i] > target_value ? 1 : 0;
  }
  sums[t] = sum;
  above[t] = count;
  __syncthreads();
  if (t == 0) {
    double total = 0.0;
    int total_above = 0;
    for (int u = 0; u < kThreads; ++u) {
      total += sums[u];
      total_above += above[u];
    }
    log_z = static_cast<double>(row_max) + log(total);
    if (target >= 0) {
      a.ranks[r] = 1 + total_above;
      a.logprobs[r] = static_cast<float>(static_cast<double>(target_value) - log_z);
    }
  }
  __syncthreads();
  float value = INFINITY;
  int index = -1;
  for (int k = 0; k < n; ++k) {
    NextMostLikely(row, vocab, value, index, values, indices, value, index);
    if (t == 0) {
      a.top_tokens[static_cast<int64_t>(r) * n + k] = max(index, 0);
      a.top_logprobs[static_cast<int64_t>(r) * n + k] = static_cast<float>(static_cast<double>(value) - log_z);
    }
  }
}

std::string LaunchFailure(const char* stage) {
#if defined(__CUDACC__)
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? std::string() : std::string(stage) + ": " + cudaGetErrorString(err);
#else
  const std::string failure = ::simt::TakeFailure();
  return failure.empty() ? failure : std::string(stage) + ": " + failure;
#endif
}

std::string LaunchSampleTokens(const SamplingArgs& args, CUstream_st* stream) {
  const int rows = args.processing.rows, vocab = args.processing.vocab;
  if (rows == 0) return "";
  LaunchProcessLogits(args.processing, args.logits, args.processed, stream);
  if (std::string failure = LaunchFailure("logit processors"); !failure.empty()) return failure;
  const float* probs = nullptr;
  if (args.any_sampled) {
    std::string failure = FlashInferSoftmax(args.processed, args.probs, rows, vocab, args.temperature, args.softmax_workspace,
                                            args.softmax_workspace_bytes, stream);
    float* current = args.probs;
    float* other = args.renormed;
    if (failure.empty() && args.any_top_k) {
      failure = FlashInferTopKRenorm(current, other, rows, vocab, args.top_k, args.top_k_state, stream);
      std::swap(current, other);
    }
    if (failure.empty() && args.any_top_p) {
      failure = FlashInferTopPRenorm(current, other, rows, vocab, args.top_p, stream);
      std::swap(current, other);
    }
    if (!failure.empty()) return failure;
    probs = current;
  }
  ARACH_LAUNCH(DrawTokensKernel, static_cast<unsigned>(rows), kThreads, 0, stream)(args, probs);
  return LaunchFailure("draw");
}

std::string LaunchScoreRows(const ScoringArgs& args, CUstream_st* stream) {
  if (args.rows == 0) return "";
  ARACH_LAUNCH(ScoreRowsKernel, static_cast<unsigned>(args.rows), kThreads, 0, stream)(args);
  return LaunchFailure("score rows");
}

size_t SoftmaxWorkspaceBytes(int rows, int vocab) { return FlashInferSoftmaxWorkspaceBytes(rows, vocab); }
size_t TopKStateBytes() { return FlashInferTopKStateBytes(); }

}  // namespace

SamplingKernels DeviceSamplingKernels() {
  SamplingKernels kernels;
  kernels.launch = &LaunchSampleTokens;
  kernels.softmax_workspace_bytes = &SoftmaxWorkspaceBytes;
  kernels.top_k_state_bytes = &TopKStateBytes;
  kernels.score = &LaunchScoreRows;
  return kernels;
}

}  // namespace arach::cuda
