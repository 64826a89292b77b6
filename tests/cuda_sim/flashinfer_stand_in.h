// What FlashInfer's batched paged-KV attention computes, written on the host for the simulated CUDA backend:
// FlashInfer's kernels use inline PTX and cannot run in the SIMT simulator, so the cuda-sim suites put this
// in their place and run everything of ours around it (the plan that maps our rows onto FlashInfer's requests,
// the hub merge kernel, the diagnostics). It follows FlashInfer's contract, not ours: request r's query row i
// attends its pages' positions [L - n + i - window_left, L - n + i] (L from kv_indptr and kv_last_page_len, n
// rows in the request), writes o in bf16 and lse = log2 of the softmax denominator in log2 units.
#pragma once

#include "engine/backend/attention_params.h"
#include "engine/backend/cuda/paged_attention_plan.h"

namespace arach::testing {

// q, out: params.q / params.out; K/V: params.kv (NHD pages); all bf16 or f16. lse: [rows, num_heads].
// window_left < 0: no window.
void FlashInferStandIn(const cuda::PagedAttentionPlan& plan, const AttentionParams& params, int window_left, float* lse);

}  // namespace arach::testing
