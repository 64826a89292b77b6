// Decode steps with the ARACH hub hand FlashInfer a sequence's verbal and hub queries as one request with twice
// the query heads, so that the sequence's pages are read once for both (paged_attention_plan.h says when).
//
// The packed query of sequence s is [num_kv_heads, 2 * group, head_dim] (group = num_heads / num_kv_heads): each
// KV head's `group` verbal heads, then the same heads of the sequence's hub row (zeros where it has none).
// FlashInfer's kernels give query head h KV head h / (2 * group), the one both halves belong to. Its outputs and
// log-sum-exps come back in the same layout ([num_seqs, 2 * num_heads, head_dim] and [num_seqs, 2 * num_heads]);
// the hub merge reads them from there (cuda_hub_merge.cu).
#pragma once

#include "engine/core/host_device.h"

namespace arach::cuda {

// The packed head that holds query head `head` (0 .. num_heads) of a sequence's verbal row, or of its hub row.
ARACH_HOST_DEVICE constexpr int GroupedHubHead(int head, int group, bool hub_row) {
  return (head / group) * 2 * group + (hub_row ? group : 0) + head % group;
}

}  // namespace arach::cuda
