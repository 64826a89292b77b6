#include "engine/backend/cuda/paged_attention_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace arach::cuda {
namespace {

absl::Status BadSequence(size_t s, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("attention layout: sequence ", s, ": ", what));
}

}  // namespace

absl::StatusOr<PagedAttentionPlan> BuildPagedAttentionPlan(const AttentionBatchLayout& layout) {
  const size_t num_seqs = layout.query_start.empty() ? 0 : layout.query_start.size() - 1;
  if (layout.block_size <= 0) return absl::InvalidArgumentError("attention layout: block size must be positive");
  if (layout.hub_start.size() != num_seqs + 1 || layout.block_table_start.size() != num_seqs + 1) {
    return absl::InvalidArgumentError(absl::StrCat("attention layout: ", num_seqs, " sequences need ", num_seqs + 1,
                                                   " hub and block table starts, got ", layout.hub_start.size(), " and ",
                                                   layout.block_table_start.size()));
  }
  const int num_verbal = num_seqs == 0 ? 0 : layout.query_start[num_seqs];
  if (layout.positions.size() != static_cast<size_t>(num_verbal)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention layout: ", num_verbal, " verbal rows but ", layout.positions.size(), " positions"));
  }
  PagedAttentionPlan plan;
  plan.qo_indptr.push_back(0);
  plan.kv_indptr.push_back(0);
  std::vector<int32_t> pages_start(num_seqs), pages_count(num_seqs), last_page_len(num_seqs);
  for (size_t s = 0; s < num_seqs; ++s) {
    const int begin = layout.query_start[s], end = layout.query_start[s + 1];
    if (begin < 0 || end <= begin || end > num_verbal) return BadSequence(s, absl::StrCat("query rows [", begin, ", ", end, ")"));
    const int first_position = layout.positions[begin];
    for (int r = begin; r < end; ++r) {
      if (layout.positions[r] != first_position + (r - begin)) {
        return BadSequence(s, absl::StrCat("row ", r, " is at position ", layout.positions[r], ", expected ",
                                           first_position + (r - begin), " (a sequence's rows are consecutive)"));
      }
    }
    if (first_position < 0) return BadSequence(s, absl::StrCat("negative position ", first_position));
    const int64_t context = static_cast<int64_t>(layout.positions[end - 1]) + 1;
    const int64_t pages = (context + layout.block_size - 1) / layout.block_size;
    const int table_begin = layout.block_table_start[s], table_end = layout.block_table_start[s + 1];
    if (table_begin < 0 || table_end < table_begin || static_cast<size_t>(table_end) > layout.block_tables.size() ||
        table_end - table_begin < pages) {
      return BadSequence(s, absl::StrCat("block table [", table_begin, ", ", table_end, ") does not cover ", context,
                                         " positions (", pages, " blocks of ", layout.block_size, ")"));
    }
    const int hub_rows = layout.hub_start[s + 1] - layout.hub_start[s];
    if (hub_rows != 0 && hub_rows != end - begin) {
      return BadSequence(s, absl::StrCat(hub_rows, " hub rows for ", end - begin, " rows (none or one per row)"));
    }
    pages_start[s] = table_begin;
    pages_count[s] = static_cast<int32_t>(pages);
    last_page_len[s] = static_cast<int32_t>(context - (pages - 1) * layout.block_size);
  }
  auto add_request = [&](size_t s, int32_t rows) {
    plan.qo_indptr.push_back(plan.qo_indptr.back() + rows);
    plan.kv_indices.insert(plan.kv_indices.end(), layout.block_tables.begin() + pages_start[s],
                           layout.block_tables.begin() + pages_start[s] + pages_count[s]);
    plan.kv_indptr.push_back(static_cast<int32_t>(plan.kv_indices.size()));
    plan.kv_last_page_len.push_back(last_page_len[s]);
    plan.request_sequence.push_back(static_cast<int32_t>(s));
    plan.max_query_rows = std::max(plan.max_query_rows, static_cast<int>(rows));
  };
  for (size_t s = 0; s < num_seqs; ++s) add_request(s, layout.query_start[s + 1] - layout.query_start[s]);
  plan.num_verbal_requests = static_cast<int>(num_seqs);
  const bool any_hub = num_seqs > 0 && layout.hub_start[num_seqs] > 0;
  plan.hub_heads_grouped = any_hub && plan.max_query_rows == 1;
  if (plan.hub_heads_grouped) return plan;
  for (size_t s = 0; s < num_seqs; ++s) {
    const int hub_rows = layout.hub_start[s + 1] - layout.hub_start[s];
    if (hub_rows > 0) add_request(s, hub_rows);
  }
  return plan;
}

AttentionParams GroupedHubView(const AttentionParams& params, void* packed_q, void* packed_out) {
  AttentionParams view;
  const int64_t packed_cols = 2 * static_cast<int64_t>(params.num_heads) * params.kv.head_dim;
  view.q = DeviceMatrix::Dense(packed_q, params.q.dtype, params.num_seqs, packed_cols);
  view.out = DeviceMatrix::Dense(packed_out, params.q.dtype, params.num_seqs, packed_cols);
  view.kv = params.kv;
  view.num_heads = 2 * params.num_heads;
  view.scale = params.scale;
  view.num_seqs = params.num_seqs;
  view.num_verbal_rows = params.num_seqs;
  view.sliding_window = params.sliding_window;
  return view;
}

}  // namespace arach::cuda
