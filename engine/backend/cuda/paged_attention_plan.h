// How one step's attention maps onto FlashInfer's batched paged-KV kernels (plain C++: built and tested
// everywhere, used by the CUDA backend).
//
// FlashInfer sees a batch of requests, each a run of query rows (qo_indptr) over a list of pages (kv_indptr,
// kv_indices) whose last page holds kv_last_page_len positions; query row i of a request with n rows over L
// cached positions sees positions [0, L - n + i] (causal), or the last window_left + 1 of them.
// Ours: sequence s's verbal rows are the requests 0..S-1 in order (their rows are q's first rows); each
// sequence with the ARACH hub adds one more request, after all verbal ones, for its hub rows (q's rows
// num_verbal + hub_start[s] ...) over the same pages, so that hub row i sees exactly what verbal row i sees.
// Decode steps (one row per sequence) with the hub instead give each sequence one request over its packed verbal and
// hub queries, twice the heads (grouped_hub_heads.h): its pages are then read once for both rows instead of twice.
// The hub's own key and value are never in the cache: the CUDA backend merges them in afterwards by the
// log-sum-exp that FlashInfer returns (cuda_hub_merge.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/attention_params.h"

namespace arach::cuda {

// Whether FlashInfer's kernels as this project compiles them take a layer: head sizes 64 and 128, any number of
// query heads per KV head. Other layers use our own paged kernel (cuda_attention.cu).
constexpr bool AttentionRunsOnFlashInfer(int head_dim, int num_heads, int num_kv_heads) {
  return (head_dim == 64 || head_dim == 128) && num_kv_heads > 0 && num_heads % num_kv_heads == 0;
}

// Whether FlashInfer's decode kernel is built for `group` query heads per KV head (its DISPATCH_GQA_GROUP_SIZE).
// Steps of one row per request with other groups run on its prefill kernels, which take any group (as FlashInfer's
// own "tensor-core decode" does); so do steps with more rows.
constexpr bool FlashInferDecodeTakesGroup(int group) {
  return group == 1 || group == 2 || group == 3 || group == 4 || group == 8;
}

struct PagedAttentionPlan {
  std::vector<int32_t> qo_indptr;         // [requests + 1] rows of q / out
  std::vector<int32_t> kv_indptr;         // [requests + 1] offsets into kv_indices
  std::vector<int32_t> kv_indices;        // block ids, each request's pages in order
  std::vector<int32_t> kv_last_page_len;  // [requests] positions used in each request's last page (1..block_size)
  std::vector<int32_t> request_sequence;  // [requests] the sequence each request belongs to
  int num_verbal_requests = 0;            // requests [0, num_verbal_requests) are verbal, the rest hub rows
  int max_query_rows = 0;                 // the most rows of any request (1: a decode-only step)
  // Request s is sequence s's packed verbal and hub queries, row s of [num_seqs, 2 * num_heads * head_dim]
  // (grouped_hub_heads.h); there are no hub requests.
  bool hub_heads_grouped = false;

  int num_requests() const { return static_cast<int>(kv_last_page_len.size()); }
  // Positions request r attends (its sequence's cached context).
  int64_t KvLength(int r, int block_size) const {
    return static_cast<int64_t>(kv_indptr[r + 1] - kv_indptr[r] - 1) * block_size + kv_last_page_len[r];
  }
};

// The attention FlashInfer runs for a step whose plan groups the hub heads: `packed_q` and `packed_out`
// ([num_seqs, 2 * num_heads * head_dim] each, dense, the type of params.q) as q and out, one row per sequence,
// 2 * num_heads query heads, no hub rows, no diagnostics; the cache, scale and window of `params`.
AttentionParams GroupedHubView(const AttentionParams& params, void* packed_q, void* packed_out);

// Checks the layout against AttentionParams' rules (INVALID_ARGUMENT naming the sequence and what is wrong) and
// builds the plan. A sequence's rows must sit at consecutive positions ending its context (context = last
// row's position + 1), its block table must cover that context, and its hub rows must be none or one per row.
absl::StatusOr<PagedAttentionPlan> BuildPagedAttentionPlan(const AttentionBatchLayout& layout);

}  // namespace arach::cuda
