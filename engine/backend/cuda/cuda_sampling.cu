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

constexpr int kSamplingThreads = 256;

// The largest of each thread's `value` over the block; every thread gets it. `shared`: [kSamplingThreads]. A tree over the
// threads (log2(kSamplingThreads) rounds), as BlockSum and BlockFirst.
__device__ float BlockMax(float value, float* shared) {
  const int t = threadIdx.x;
  shared[t] = value;
  __syncthreads();
  for (int stride = kSamplingThreads / 2; stride > 0; stride >>= 1) {
    if (t < stride) shared[t] = fmaxf(shared[t], shared[t + stride]);
    __syncthreads();
  }
  const float result = shared[0];
  __syncthreads();  // `shared` is free again
  return result;
}

// The sum of each thread's `value` over the block, added in a fixed order (the same every launch); every thread
// gets it. `shared`: [kSamplingThreads].
template <typename T>
__device__ T BlockSum(T value, T* shared) {
  const int t = threadIdx.x;
  shared[t] = value;
  __syncthreads();
  for (int stride = kSamplingThreads / 2; stride > 0; stride >>= 1) {
    if (t < stride) shared[t] += shared[t + stride];
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();  // `shared` is free again
  return result;
}

// Each thread's inclusive prefix sum of `value` over the threads in order (Hillis-Steele: log2(kSamplingThreads) rounds); it
// stays in `shared` ([kSamplingThreads]: shared[u] = the sum over threads 0..u) until the caller's next __syncthreads.
__device__ double BlockInclusiveSum(double value, double* shared) {
  const int t = threadIdx.x;
  shared[t] = value;
  __syncthreads();
  for (int offset = 1; offset < kSamplingThreads; offset <<= 1) {
    const double earlier = t >= offset ? shared[t - offset] : 0.0;
    __syncthreads();
    shared[t] += earlier;
    __syncthreads();
  }
  return shared[t];
}

// The first of the threads' (value, index) pairs in the order (value descending, index ascending), index < 0
// meaning none; every thread gets it. `values`, `indices`: [kSamplingThreads] scratch.
__device__ void BlockFirst(float& value, int& index, float* values, int* indices) {
  const int t = threadIdx.x;
  values[t] = value;
  indices[t] = index;
  __syncthreads();
  for (int stride = kSamplingThreads / 2; stride > 0; stride >>= 1) {
    if (t < stride) {
      const float v = values[t + stride];
      const int i = indices[t + stride];
      if (i >= 0 && (indices[t] < 0 || v > values[t] || (v == values[t] && i < indices[t]))) {
        values[t] = v;
        indices[t] = i;
      }
    }
    __syncthreads();
  }
  value = values[0];
  index = indices[0];
  __syncthreads();  // the scratch is free again
}

// The most likely token of the row ([vocab]) among those after (after_value, after_index) in the order (logit
// descending, id ascending), with its logit; (-inf, -1) when there is none. after_index < 0 admits every token:
// the row's first maximum, the lowest id among equals as the CPU's max_element. Thread t reads tokens t,
// t + kSamplingThreads, ... (a warp's reads coalesce). NaNs never rank. Every thread gets the result; `values`, `indices`:
// [kSamplingThreads] scratch.
__device__ void NextMostLikely(const float* row, int vocab, float after_value, int after_index, float* values, int* indices,
                               float& value, int& index) {
  float best = -INFINITY;
  int found = -1;
  for (int i = threadIdx.x; i < vocab; i += kSamplingThreads) {
    const float v = row[i];
    const bool after = after_index < 0 || v < after_value || (v == after_value && i > after_index);
    if (after && (v > best || (found < 0 && v >= best))) {  // ids ascend: the first of equals is the lowest id
      best = v;
      found = i;
    }
  }
  value = best;
  index = found;
  BlockFirst(value, index, values, indices);
}

// One block per row. A sampled row's thread t owns the tokens [t * chunk, (t + 1) * chunk), so that the prefix sums
// over the threads in order are cumulative sums in token-id order (the inverse CDF's); greedy rows and the log-prob
// read strided (coalesced), where the order does not matter.
__global__ void __launch_bounds__(kSamplingThreads) DrawTokensKernel(SamplingArgs a, const float* probs) {
  __shared__ double kept_mass[kSamplingThreads];  // per thread, then its inclusive prefix sum
  __shared__ float values[kSamplingThreads];
  __shared__ int indices[kSamplingThreads];       // each thread's argmax, or its last kept token
  __shared__ double target;
  __shared__ int chosen;
  const int r = blockIdx.x, t = threadIdx.x, vocab = a.processing.vocab;
  const int chunk = (vocab + kSamplingThreads - 1) / kSamplingThreads;
  const int begin = min(vocab, t * chunk), end = min(vocab, begin + chunk);

  if (a.greedy[r] != 0) {  // the same branch for the whole block
    float best = -INFINITY;
    int index = -1;
    NextMostLikely(a.processed + static_cast<int64_t>(r) * vocab, vocab, INFINITY, -1, values, indices, best, index);
    if (t == 0) chosen = max(index, 0);
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
    indices[t] = last;
    const double through = BlockInclusiveSum(mass, kept_mass);  // kept mass of threads 0..t
    const double before = t > 0 ? kept_mass[t - 1] : 0.0;       // of threads 0..t-1: thread t's share is [before, through)
    if (t == 0) {
      target = CounterUniform(a.seed[r], a.counter[r]) * kept_mass[kSamplingThreads - 1];
      chosen = -1;
    }
    __syncthreads();
    // The one thread whose share of the cumulative mass holds the target walks its tokens (the shares tile the
    // total exactly: each ends where the next begins).
    if (before <= target && target < through) {
      double cumulative = before;
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
      for (int u = kSamplingThreads - 1; u >= 0 && pick < 0; --u) pick = indices[u];  // rounding put the target past the end
      chosen = max(pick, 0);
    }
  }
  __syncthreads();
  if (t == 0) a.tokens[r] = chosen;
  if (a.logprobs == nullptr) return;  // the same for the whole block
  // The picked token's log-prob under the model's own distribution: log-softmax of the unprocessed logits.
  const float* raw = a.logits + static_cast<int64_t>(r) * vocab;
  float local_max = -INFINITY;
  for (int i = t; i < vocab; i += kSamplingThreads) local_max = fmaxf(local_max, raw[i]);
  const float row_max = BlockMax(local_max, values);
  double sum = 0.0;
  for (int i = t; i < vocab; i += kSamplingThreads) sum += exp(static_cast<double>(raw[i]) - row_max);
  const double total = BlockSum(sum, kept_mass);
  if (t == 0) a.logprobs[r] = static_cast<float>(static_cast<double>(raw[chosen]) - row_max - log(total));
}

// Alternatives found in the one pass over a row that also finds its maximum; each one beyond them takes a pass.
constexpr int kListedTop = 20;  // the most the OpenAI APIs ask for

// Puts (value, id) into a thread's list of at most `capacity` tokens ordered (logit descending, id ascending),
// `held` of them in it, when it ranks there. The thread's ids arrive ascending, so an equal logit goes after those
// held. NaNs never rank.
__device__ void KeepIfRanked(float value, int id, float* values, int* ids, int& held, int capacity) {
  if (value != value || (held == capacity && !(value > values[capacity - 1]))) return;
  int slot = held < capacity ? held++ : capacity - 1;
  for (; slot > 0 && values[slot - 1] < value; --slot) {
    values[slot] = values[slot - 1];
    ids[slot] = ids[slot - 1];
  }
  values[slot] = value;
  ids[slot] = id;
}

// One block per row: one pass finds the row's max(top_n, 1) most likely tokens (each thread keeping its own best,
// then merged over the block a token at a time: the first is the row's first maximum), a second its log-sum-exp
// (double sums, as the host's) and how many logits exceed the target's. Alternatives beyond kListedTop take a pass
// each.
__global__ void __launch_bounds__(kSamplingThreads) ScoreRowsKernel(ScoringArgs a) {
  __shared__ double sums[kSamplingThreads];
  __shared__ float values[kSamplingThreads];
  __shared__ int indices[kSamplingThreads];
  __shared__ int above[kSamplingThreads];
  __shared__ float listed_values[kListedTop];  // the merged list (thread 0 reads it)
  __shared__ int listed_ids[kListedTop];
  const int r = blockIdx.x, t = threadIdx.x, vocab = a.vocab, n = a.top_n;
  const float* row = a.logits + static_cast<int64_t>(r) * vocab;

  const int listed = min(max(n, 1), kListedTop);
  float own_values[kListedTop];  // this thread's best tokens: [held] of them, in order
  int own_ids[kListedTop];
  int held = 0;
  for (int i = t; i < vocab; i += kSamplingThreads) KeepIfRanked(row[i], i, own_values, own_ids, held, listed);
  float value = -INFINITY, row_max = -INFINITY;
  int index = -1, argmax = -1, next = 0;  // next: this thread's first token not yet merged
  for (int k = 0; k < listed; ++k) {
    value = next < held ? own_values[next] : -INFINITY;
    index = next < held ? own_ids[next] : -1;
    BlockFirst(value, index, values, indices);
    if (next < held && own_ids[next] == index) ++next;
    if (k == 0) {
      row_max = value;
      argmax = max(index, 0);
    }
    if (t == 0) {
      listed_values[k] = value;
      listed_ids[k] = index;
    }
  }
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
  for (int i = t; i < vocab; i += kSamplingThreads) {
    sum += exp(static_cast<double>(row[i]) - row_max);
    count += row[i] > target_value ? 1 : 0;
  }
  const double log_z = static_cast<double>(row_max) + log(BlockSum(sum, sums));
  const int total_above = BlockSum(count, above);
  if (t == 0) {
    if (target >= 0) {
      a.ranks[r] = 1 + total_above;
      a.logprobs[r] = static_cast<float>(static_cast<double>(target_value) - log_z);
    }
    for (int k = 0; k < min(n, listed); ++k) {
      a.top_tokens[static_cast<int64_t>(r) * n + k] = max(listed_ids[k], 0);
      a.top_logprobs[static_cast<int64_t>(r) * n + k] = static_cast<float>(static_cast<double>(listed_values[k]) - log_z);
    }
  }
  __syncthreads();
  for (int k = listed; k < n; ++k) {  // continues after the last listed token while there is one
    if (index >= 0) NextMostLikely(row, vocab, value, index, values, indices, value, index);
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
  ARACH_LAUNCH(DrawTokensKernel, static_cast<unsigned>(rows), kSamplingThreads, 0, stream)(args, probs);
  return LaunchFailure("draw");
}

std::string LaunchScoreRows(const ScoringArgs& args, CUstream_st* stream) {
  if (args.rows == 0) return "";
  ARACH_LAUNCH(ScoreRowsKernel, static_cast<unsigned>(args.rows), kSamplingThreads, 0, stream)(args);
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
