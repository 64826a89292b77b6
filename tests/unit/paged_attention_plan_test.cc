// The plan that maps a step onto FlashInfer's paged kernels, on random block tables: every query row
// (verbal and hub) must see, through FlashInfer's rules (request pages, last page length, causal offset,
// window), exactly the cache slots AttentionParams' rules give it, whether hub rows are requests of their own or
// packed with their verbal rows (decode steps, grouped_hub_heads.h); malformed layouts are refused naming the
// sequence.
#include "engine/backend/cuda/paged_attention_plan.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "engine/backend/cuda/grouped_hub_heads.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach::cuda {
namespace {

struct Layout {
  std::vector<int32_t> query_start{0}, positions, block_table_start{0}, block_tables, hub_start{0};
  int block_size = 16;
  AttentionBatchLayout View() const {
    AttentionBatchLayout v;
    v.query_start = query_start;
    v.positions = positions;
    v.block_table_start = block_table_start;
    v.block_tables = block_tables;
    v.hub_start = hub_start;
    v.block_size = block_size;
    v.num_heads = 4;
    v.num_kv_heads = 2;
    v.head_dim = 64;
    return v;
  }
};

// Random sequences (context 1..200, a decode row or a prefill chunk ending the context, hub on some) over
// shuffled blocks; some tables hold spare blocks past the context.
Layout RandomLayout(std::mt19937& rng) {
  Layout l;
  l.block_size = std::vector<int>{1, 4, 16, 32}[rng() % 4];
  std::vector<int32_t> pool(4000);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  size_t next_block = 0;
  const int num_seqs = 1 + static_cast<int>(rng() % 8);
  for (int s = 0; s < num_seqs; ++s) {
    const int context = 1 + static_cast<int>(rng() % 200);
    const int rows = rng() % 2 == 0 ? 1 : 1 + static_cast<int>(rng() % context);
    for (int i = 0; i < rows; ++i) l.positions.push_back(context - rows + i);
    l.query_start.push_back(l.query_start.back() + rows);
    l.hub_start.push_back(l.hub_start.back() + (rng() % 2 == 0 ? rows : 0));
    const int blocks = (context + l.block_size - 1) / l.block_size + static_cast<int>(rng() % 2);
    for (int b = 0; b < blocks; ++b) l.block_tables.push_back(pool[next_block++]);
    l.block_table_start.push_back(static_cast<int32_t>(l.block_tables.size()));
  }
  return l;
}

// The slots (block * block_size + offset) FlashInfer's rules give row `i` of request `r`.
std::vector<int64_t> FlashInferSlots(const PagedAttentionPlan& plan, int r, int i, int block_size, int window) {
  const int64_t kv_len = plan.KvLength(r, block_size);
  const int64_t qo_len = plan.qo_indptr[r + 1] - plan.qo_indptr[r];
  const int64_t last = kv_len - qo_len + i;
  const int64_t first = window > 0 ? std::max<int64_t>(0, last - (window - 1)) : 0;  // window_left = window - 1
  std::vector<int64_t> slots;
  for (int64_t j = first; j <= last; ++j) {
    slots.push_back(static_cast<int64_t>(plan.kv_indices[plan.kv_indptr[r] + j / block_size]) * block_size + j % block_size);
  }
  return slots;
}

// The slots AttentionParams' rules give verbal row `row` of sequence `s` (and its hub row).
std::vector<int64_t> OurSlots(const Layout& l, int s, int row, int window) {
  const int limit = l.positions[row];
  const int first = window > 0 ? std::max(0, limit - window + 1) : 0;
  std::vector<int64_t> slots;
  for (int j = first; j <= limit; ++j) {
    slots.push_back(static_cast<int64_t>(l.block_tables[l.block_table_start[s] + j / l.block_size]) * l.block_size + j % l.block_size);
  }
  return slots;
}

// A plan that groups the hub heads: request s is sequence s, its one row the packed queries' row s, over exactly
// the slots its verbal (and hub) row sees.
void ExpectGroupedRequestsSeeTheirSequencesSlots(const Layout& l, const PagedAttentionPlan& plan, int window, uint32_t seed) {
  const int num_seqs = static_cast<int>(l.query_start.size()) - 1;
  ASSERT_EQ(plan.num_requests(), num_seqs);
  EXPECT_EQ(plan.num_verbal_requests, num_seqs);
  EXPECT_EQ(plan.max_query_rows, 1);
  EXPECT_EQ(plan.qo_indptr.back(), num_seqs);
  for (int s = 0; s < num_seqs; ++s) {
    EXPECT_EQ(plan.request_sequence[s], s);
    EXPECT_EQ(plan.qo_indptr[s], s) << "request s reads row s of the packed queries";
    EXPECT_EQ(FlashInferSlots(plan, s, 0, l.block_size, window), OurSlots(l, s, l.query_start[s], window)) << "seed " << seed;
  }
}

TEST(PagedAttentionPlan, EveryRowSeesTheSlotsOfItsRowOnRandomTables) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const Layout l = RandomLayout(rng);
    const int window = seed % 3 == 0 ? 1 + static_cast<int>(rng() % 50) : 0;
    auto plan = BuildPagedAttentionPlan(l.View());
    ASSERT_TRUE(plan.ok()) << plan.status();
    if (plan->hub_heads_grouped) {  // every sequence a decode row, some with the hub
      ExpectGroupedRequestsSeeTheirSequencesSlots(l, *plan, window, seed);
      continue;
    }
    const int num_seqs = static_cast<int>(l.query_start.size()) - 1, num_verbal = l.query_start.back();
    ASSERT_EQ(plan->num_verbal_requests, num_seqs);
    ASSERT_EQ(plan->qo_indptr.back(), num_verbal + l.hub_start.back()) << "every row of q is some request's";
    int max_rows = 0;
    std::vector<int> rows_seen(num_verbal + l.hub_start.back(), 0);
    for (int r = 0; r < plan->num_requests(); ++r) {
      const int s = plan->request_sequence[r];
      const bool hub = r >= plan->num_verbal_requests;
      ASSERT_EQ(plan->kv_last_page_len[r] >= 1 && plan->kv_last_page_len[r] <= l.block_size, true) << seed;
      max_rows = std::max(max_rows, plan->qo_indptr[r + 1] - plan->qo_indptr[r]);
      for (int q = plan->qo_indptr[r]; q < plan->qo_indptr[r + 1]; ++q) {
        const int i = q - plan->qo_indptr[r];
        // The q row FlashInfer reads must be this sequence's verbal row i, or its hub row i.
        const int expected_q = hub ? num_verbal + l.hub_start[s] + i : l.query_start[s] + i;
        ASSERT_EQ(q, expected_q) << "seed " << seed << " request " << r;
        ++rows_seen[q];
        EXPECT_EQ(FlashInferSlots(*plan, r, i, l.block_size, window), OurSlots(l, s, l.query_start[s] + i, window))
            << "seed " << seed << " request " << r << " row " << i << (hub ? " (hub)" : "");
      }
    }
    EXPECT_EQ(plan->max_query_rows, max_rows);
    EXPECT_THAT(rows_seen, ::testing::Each(1)) << "each row in exactly one request, seed " << seed;
  }
}

// Decode steps with the hub: one request per sequence over its packed verbal and hub queries.
TEST(PagedAttentionPlan, GroupedDecodeStepsGiveEachSequenceOneRequestOverItsSlots) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed);
    Layout l = RandomLayout(rng);
    // The same sequences as decode rows (the last position of each context), hub on a random subset (at least one).
    Layout decode = l;
    decode.positions.clear();
    decode.query_start = {0};
    decode.hub_start = {0};
    const int num_seqs = static_cast<int>(l.query_start.size()) - 1;
    for (int s = 0; s < num_seqs; ++s) {
      decode.positions.push_back(l.positions[l.query_start[s + 1] - 1]);
      decode.query_start.push_back(s + 1);
      decode.hub_start.push_back(decode.hub_start.back() + (s == 0 || rng() % 2 == 0 ? 1 : 0));
    }
    const int window = seed % 3 == 0 ? 1 + static_cast<int>(rng() % 50) : 0;
    auto plan = BuildPagedAttentionPlan(decode.View());
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(plan->hub_heads_grouped) << seed;
    ExpectGroupedRequestsSeeTheirSequencesSlots(decode, *plan, window, seed);
  }
}

TEST(PagedAttentionPlan, HubHeadsAreGroupedOnlyForDecodeStepsWithTheHub) {
  Layout decode;  // two decode rows, the first with the hub
  decode.block_size = 4;
  decode.positions = {5, 2};
  decode.query_start = {0, 1, 2};
  decode.block_tables = {9, 3, 7};
  decode.block_table_start = {0, 2, 3};
  decode.hub_start = {0, 1, 1};
  Layout prefill = decode;  // sequence 0 as a 3-row chunk
  prefill.positions = {3, 4, 5, 2};
  prefill.query_start = {0, 3, 4};
  prefill.hub_start = {0, 3, 3};
  Layout no_hub = decode;
  no_hub.hub_start = {0, 0, 0};
  struct Case {
    const Layout* layout;
    int heads, kv_heads;
    bool grouped;
  };
  // Any group: doubled, 2, 4 and 8 run on FlashInfer's decode kernel, 6 and 16 on its prefill kernels.
  const std::vector<Case> cases = {{&decode, 12, 12, true}, {&decode, 4, 2, true},  {&decode, 32, 8, true},
                                   {&decode, 6, 2, true},   {&decode, 8, 1, true},  {&prefill, 4, 2, false},
                                   {&no_hub, 4, 2, false},  {&prefill, 8, 1, false}};
  for (const Case& c : cases) {
    AttentionBatchLayout view = c.layout->View();
    view.num_heads = c.heads;
    view.num_kv_heads = c.kv_heads;
    auto plan = BuildPagedAttentionPlan(view);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->hub_heads_grouped, c.grouped) << c.heads << " heads over " << c.kv_heads << ", " << plan->max_query_rows
                                                  << " rows at most, " << c.layout->hub_start.back() << " hub rows";
    const int num_seqs = static_cast<int>(c.layout->query_start.size()) - 1;
    EXPECT_EQ(plan->num_requests(), c.grouped ? num_seqs : num_seqs + (c.layout->hub_start.back() > 0 ? 1 : 0));
  }
}

// Each verbal and hub head of a sequence has its own packed head, within the packed group of its KV head (the one
// FlashInfer's decode gives packed head h: h / (2 * group)).
TEST(PagedAttentionPlan, GroupedHubHeadsPackEachHeadOnceWithinItsKvHeadsGroup) {
  for (int group : {1, 2, 4}) {
    for (int kv_heads : {1, 2, 12}) {
      const int heads = group * kv_heads;
      std::vector<int> seen(2 * heads, 0);
      for (int h = 0; h < heads; ++h) {
        for (bool hub : {false, true}) {
          const int packed = GroupedHubHead(h, group, hub);
          ASSERT_GE(packed, 0);
          ASSERT_LT(packed, 2 * heads);
          ++seen[packed];
          EXPECT_EQ(packed / (2 * group), h / group) << "head " << h << (hub ? " (hub)" : "") << " group " << group;
        }
      }
      EXPECT_THAT(seen, ::testing::Each(1)) << "group " << group << ", " << kv_heads << " KV heads";
    }
  }
}

TEST(PagedAttentionPlan, MalformedLayoutsAreRefusedNamingTheSequence) {
  Layout good;
  good.block_size = 4;
  good.positions = {5, 6, 7, 2};  // sequence 0: 3 rows ending context 8; sequence 1: a decode row at position 2
  good.query_start = {0, 3, 4};
  good.block_tables = {9, 3, 7};
  good.block_table_start = {0, 2, 3};
  good.hub_start = {0, 3, 3};
  ASSERT_TRUE(BuildPagedAttentionPlan(good.View()).ok());

  Layout gap = good;
  gap.positions = {5, 7, 8, 2};
  Layout short_table = good;
  short_table.positions = {6, 7, 8, 2};  // context 9 needs 3 blocks of 4
  Layout half_hub = good;
  half_hub.hub_start = {0, 2, 2};
  Layout empty = good;
  empty.query_start = {0, 4, 4};
  empty.positions = {4, 5, 6, 7};
  empty.hub_start = {0, 4, 4};
  const std::vector<std::pair<Layout, std::string>> cases = {
      {gap, "sequence 0: row 1 is at position 7, expected 6"},
      {short_table, "sequence 0: block table [0, 2) does not cover 9 positions"},
      {half_hub, "sequence 0: 2 hub rows for 3 rows"},
      {empty, "sequence 1: query rows [4, 4)"},
  };
  for (const auto& [layout, message] : cases) {
    const absl::StatusOr<PagedAttentionPlan> plan = BuildPagedAttentionPlan(layout.View());
    ASSERT_FALSE(plan.ok()) << message;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(plan.status().message()), ::testing::HasSubstr(message));
  }
}

}  // namespace
}  // namespace arach::cuda
