// The plain-data description of one paged attention call over a flattened batch.
//
// Rows of the batch: the verbal rows of all sequences first (sequence s owns rows
// [query_start[s], query_start[s+1])), then the ARACH hub rows (sequence s owns hub rows
// [hub_start[s], hub_start[s+1]) counted from the first hub row; a sequence has either no hub rows
// or exactly one per verbal row, hub i paired with verbal i).
//
// Keys and values: every verbal row's K/V has already been written to the paged cache. Verbal row r
// and its hub row both attend cached positions [first, positions[r]] of their sequence, first = 0 or,
// with a sliding window W, max(0, positions[r] - W + 1); with ARACH on,
// both also attend the pair's own hub key/value with logit + hub_logit_offset[s]. Hub keys/values are
// never in the cache: they are passed in `hub_k` / `hub_v` for this call only.
//
// Attention-mass diagnostics (`attention_mass`, null unless asked, so a normal step pays nothing): the
// kernel adds, for each sequence s and head h, the probability each of its query rows puts on cached
// position 0 (the attention sink; 0 where a sliding window hides it) and on the row's own hub, summed
// separately over verbal and hub rows. p = exp(logit - log-sum-exp) of the same softmax the output uses.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

#include "engine/backend/device_matrix.h"

namespace arach {

// One layer of the paged KV cache: K and V are each [num_blocks, block_size, num_kv_heads, head_dim].
struct PagedKvLayer {
  void* k = nullptr;
  void* v = nullptr;
  DType dtype = DType::kF32;
  int block_size = 16;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// Which sum of attention probability one slot of AttentionParams::attention_mass holds.
enum AttentionMassKind : int {
  kVerbalRowsOnSink = 0,  // verbal query rows -> position 0
  kVerbalRowsOnHub = 1,   // verbal query rows -> their own hub
  kHubRowsOnSink = 2,     // hub query rows -> position 0
  kHubRowsOnHub = 3,      // hub query rows -> their own hub (the pair's hub key)
  kAttentionMassKinds = 4,
};

struct AttentionParams {
  DeviceMatrix q;    // [num_verbal_rows + num_hub_rows, num_heads * head_dim]
  DeviceMatrix out;  // [num_verbal_rows + num_hub_rows, num_heads * head_dim]
  PagedKvLayer kv;
  int num_heads = 0;
  float scale = 1.0f;  // multiplies q.k before the softmax
  int num_seqs = 0;
  int num_verbal_rows = 0;
  const int32_t* query_start = nullptr;        // [num_seqs + 1] device
  const int32_t* positions = nullptr;          // [num_verbal_rows] device
  const int32_t* block_table_start = nullptr;  // [num_seqs + 1] device, offsets into block_tables
  const int32_t* block_tables = nullptr;       // [block_table_start[num_seqs]] device, block ids
  int sliding_window = 0;                      // a query sees the last `sliding_window` positions; 0 = all

  // ARACH hub term; num_hub_rows == 0 means no sequence has it.
  int num_hub_rows = 0;
  const int32_t* hub_start = nullptr;          // [num_seqs + 1] device
  const float* hub_logit_offset = nullptr;     // [num_seqs] device, b
  DeviceMatrix hub_k;                          // [num_hub_rows, num_kv_heads * head_dim]
  DeviceMatrix hub_v;                          // [num_hub_rows, num_kv_heads * head_dim]

  // Diagnostics: [num_seqs, kAttentionMassKinds, num_heads] float32 device sums, added to (the caller
  // zeroes them); null = not computed.
  float* attention_mass = nullptr;
};

// The host's view of one step's batch: the same arrays AttentionParams points to on the device, for devices
// that schedule attention on the host once per step (Backend::PlanAttention: the CUDA backend builds
// FlashInfer's schedule from it). Spans into the caller's vectors, valid for the call.
struct AttentionBatchLayout {
  absl::Span<const int32_t> query_start;        // [num_seqs + 1]
  absl::Span<const int32_t> positions;          // [num_verbal_rows]
  absl::Span<const int32_t> block_table_start;  // [num_seqs + 1]
  absl::Span<const int32_t> block_tables;       // block ids
  absl::Span<const int32_t> hub_start;          // [num_seqs + 1]
  int block_size = 16;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  // The step's ops will be recorded or replayed as a step graph (Backend::BeginStepGraph): plan so that what the
  // kernels are launched with depends only on the batch's shape, and the schedule lives at the same device
  // addresses (CUDA: FlashInfer's plan with enable_cuda_graph).
  bool for_step_graph = false;
};

// The attention-mass diagnostics of one step (AttentionMassKind), for every layer and sequence:
// sums over the step's rows of each sequence that asked (other sequences' slots are not meaningful).
struct StepAttentionDiagnostics {
  int num_layers = 0;
  int num_sequences = 0;
  int num_heads = 0;
  std::vector<float> sums;  // [num_layers, num_sequences, kAttentionMassKinds, num_heads]; empty: nobody asked

  float At(int layer, int seq, AttentionMassKind kind, int head) const {
    return sums[((static_cast<size_t>(layer) * num_sequences + seq) * kAttentionMassKinds + kind) * num_heads + head];
  }
};

}  // namespace arach
