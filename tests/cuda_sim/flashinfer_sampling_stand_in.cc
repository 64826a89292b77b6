// What FlashInfer's sampling stages compute (engine/backend/cuda/flashinfer_kernels.h), written on the host for the
// SIMT simulator: FlashInfer's kernels use inline PTX and cub, so the cuda-sim suites run this in their place and
// everything of ours around it (the packing, the logit processors, the draw). It follows the contract of
// flashinfer_kernels.h, which is FlashInfer's: the top-k stage keeps every token tied with the k-th largest, the
// top-p stage the smallest set of the largest probabilities whose sum reaches top_p, with every token tied with the
// last one kept.
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "engine/backend/cuda/flashinfer_kernels.h"

namespace arach::cuda {
namespace {

// Keeps the row's values >= floor, rescaled to sum to 1.
void KeepAtLeast(const float* in, float* out, int vocab, float floor) {
  double kept = 0.0;
  for (int t = 0; t < vocab; ++t) kept += in[t] >= floor ? in[t] : 0.0f;
  for (int t = 0; t < vocab; ++t) out[t] = in[t] >= floor && kept > 0.0 ? static_cast<float>(in[t] / kept) : 0.0f;
}

std::vector<float> Descending(const float* row, int vocab) {
  std::vector<float> sorted(row, row + vocab);
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  return sorted;
}

}  // namespace

size_t FlashInferSoftmaxWorkspaceBytes(int /*rows*/, int /*vocab*/) { return 0; }

std::string FlashInferSoftmax(const float* logits, float* probs, int rows, int vocab, const float* temperature,
                              void* /*workspace*/, size_t /*workspace_bytes*/, cudaStream_t /*stream*/) {
  for (int r = 0; r < rows; ++r) {
    const float* x = logits + static_cast<size_t>(r) * vocab;
    float* p = probs + static_cast<size_t>(r) * vocab;
    const float inv_t = 1.0f / temperature[r];
    const float top = *std::max_element(x, x + vocab) * inv_t;
    double sum = 0.0;
    for (int t = 0; t < vocab; ++t) sum += p[t] = std::exp(x[t] * inv_t - top);
    for (int t = 0; t < vocab; ++t) p[t] = static_cast<float>(p[t] / sum);
  }
  return "";
}

size_t FlashInferTopKStateBytes() { return 64; }

std::string FlashInferTopKRenorm(const float* probs, float* out, int rows, int vocab, const int32_t* top_k, void* /*row_states*/,
                                 cudaStream_t /*stream*/) {
  for (int r = 0; r < rows; ++r) {
    const float* p = probs + static_cast<size_t>(r) * vocab;
    const int k = top_k[r];
    KeepAtLeast(p, out + static_cast<size_t>(r) * vocab, vocab, k >= vocab || k <= 0 ? 0.0f : Descending(p, vocab)[k - 1]);
  }
  return "";
}

std::string FlashInferTopPRenorm(const float* probs, float* out, int rows, int vocab, const float* top_p, cudaStream_t /*stream*/) {
  for (int r = 0; r < rows; ++r) {
    const float* p = probs + static_cast<size_t>(r) * vocab;
    float floor = 0.0f;
    if (top_p[r] < 1.0f) {
      const std::vector<float> sorted = Descending(p, vocab);
      double cumulative = 0.0;
      for (float value : sorted) {
        cumulative += value;
        floor = value;
        if (cumulative >= top_p[r]) break;
      }
    }
    KeepAtLeast(p, out + static_cast<size_t>(r) * vocab, vocab, floor);
  }
  return "";
}

}  // namespace arach::cuda
