// Scheduler behaviour as tables of expected states per step, without a model: a harness plays the
// engine's part (complete the step, append a token to sequences whose chunk completed, finish them at a
// target length), and property tests check block accounting under random finishes, cancels and preemption.
#include "engine/sched/scheduler.h"

#include <chrono>
#include <map>
#include <random>
#include <sstream>

#include "gtest/gtest.h"

namespace arach {
namespace {

class Harness {
 public:
  Harness(SchedulerConfig config, int num_blocks, int block_size)
      : allocator_(num_blocks), scheduler_(config, allocator_), block_size_(block_size) {}

  // Adds sequence `name` with `prompt` tokens (token values from `first_token`) that finishes after `generate` tokens;
  // it arrives now (Advance moves the harness's clock).
  Sequence* Add(char name, int prompt, int generate, int first_token = 0, Variant variant = {}, bool background = false,
                int priority = 0) {
    auto seq = std::make_unique<Sequence>(block_size_);
    seq->background = background;
    seq->priority = priority;
    seq->arrival = now_;
    seq->id = static_cast<uint64_t>(name);
    for (int i = 0; i < prompt; ++i) seq->tokens.push_back(first_token + i);
    seq->prompt_len = prompt;
    seq->variant = variant;
    targets_[seq.get()] = prompt + generate;
    scheduler_.Add(seq.get());
    Sequence* raw = seq.get();
    owned_.push_back(std::move(seq));
    return raw;
  }

  // A live sequence of `priority` (lower first).
  Sequence* AddWithPriority(char name, int prompt, int generate, int priority) {
    return Add(name, prompt, generate, 0, {}, false, priority);
  }
  std::chrono::steady_clock::time_point now() const { return now_; }
  void Advance(double seconds) {
    now_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  }

  // Runs one step; returns "A0+8 B0+3" style chunks.
  std::string Step() {
    const ScheduledBatch batch = scheduler_.Schedule(now_);
    scheduler_.CompleteStep(batch);
    std::ostringstream out;
    for (const ScheduledChunk& c : batch.chunks) {
      out << (out.tellp() > 0 ? " " : "") << static_cast<char>(c.seq->id) << c.start << "+" << c.num_tokens;
      if (!c.completes) continue;
      Sequence* seq = c.seq;
      seq->tokens.push_back(1000 + seq->num_generated());  // the "sampled" token
      if (static_cast<int>(seq->tokens.size()) >= targets_[seq]) scheduler_.Remove(seq);
    }
    for (const Sequence* p : batch.preempted) out << " !" << static_cast<char>(p->id);
    return out.str();
  }

  std::string Running() const { return Names(scheduler_.running()); }
  std::string Waiting() const { return Names(std::vector<Sequence*>(scheduler_.waiting().begin(), scheduler_.waiting().end())); }
  std::string BackgroundWaiting() const {
    return Names(std::vector<Sequence*>(scheduler_.background_waiting().begin(), scheduler_.background_waiting().end()));
  }
  Scheduler& scheduler() { return scheduler_; }
  BlockAllocator& allocator() { return allocator_; }

 private:
  static std::string Names(const std::vector<Sequence*>& seqs) {
    std::string s;
    for (const Sequence* q : seqs) s += static_cast<char>(q->id);
    return s;
  }
  BlockAllocator allocator_;
  Scheduler scheduler_;
  int block_size_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  std::map<Sequence*, int> targets_;
  std::vector<std::unique_ptr<Sequence>> owned_;
};

struct StepRow {
  std::string chunks;   // what the step computed
  std::string running;  // after the step
  std::string waiting;
  int free_blocks;
};

void CheckTable(Harness& h, const std::vector<StepRow>& table) {
  for (size_t i = 0; i < table.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(h.Step(), table[i].chunks);
    EXPECT_EQ(h.Running(), table[i].running);
    EXPECT_EQ(h.Waiting(), table[i].waiting);
    EXPECT_EQ(h.allocator().num_free(), table[i].free_blocks);
  }
}

TEST(Scheduler, AdmissionAndChunkedPrefillUnderTheTokenBudget) {
  // 8 tokens per step, 2 sequences at most, blocks of 4.
  Harness h({/*max_num_seqs=*/2, /*max_num_batched_tokens=*/8, /*enable_prefix_caching=*/false}, 32, 4);
  h.Add('A', 10, 3);
  h.Add('B', 3, 2);
  h.Add('C', 5, 1);
  CheckTable(h, {
      {"A0+8", "A", "BC", 30},                 // A's prompt is chunked; B waits for the budget
      {"A8+2 B0+3", "AB", "C", 28},            // A finishes its prompt (token 1); B prefills (token 1); C: max_num_seqs
      {"A10+1 B3+1", "A", "C", 29},            // decodes; B reaches 5 tokens and finishes
      {"A11+1 C0+5", "", "", 32},              // A finishes (13 tokens); C admitted whole and finishes (6)
  });
}

TEST(Scheduler, PreemptsTheNewestAndResumesIt) {
  // 6 blocks of 2 tokens: A and B grow until the pool runs out; B (newer) is preempted, recomputed later.
  Harness h({4, 64, false}, 6, 2);
  h.Add('A', 4, 5);
  h.Add('B', 4, 5);
  CheckTable(h, {
      {"A0+4 B0+4", "AB", "", 2},  // 2 + 2 blocks
      {"A4+1 B4+1", "AB", "", 0},  // each takes a third block
      {"A5+1 B5+1", "AB", "", 0},
      {"A6+1 !B", "A", "B", 2},    // A needs a 4th block: B (newest) is preempted, its 3 blocks come back
      {"A7+1", "", "B", 6},        // B (7 tokens, 4 blocks) does not fit beside A; A finishes at 9 tokens
      {"B0+7", "B", "", 2},        // B recomputes its prompt and generated tokens and samples its 8th
      {"B7+1", "", "", 6},         // and finishes at 9
  });
}

TEST(Scheduler, AdmitsByPriorityThenArrival) {
  // One slot: A runs; B, C, D wait and are admitted lowest priority number first, arrival order among equals.
  Harness h({/*max_num_seqs=*/1, 64, false}, 64, 4);
  h.AddWithPriority('A', 2, 2, -5);
  h.AddWithPriority('B', 2, 1, 0);
  h.AddWithPriority('C', 2, 1, 1);
  h.AddWithPriority('D', 2, 1, -1);
  h.AddWithPriority('E', 2, 1, 0);
  CheckTable(h, {
      {"A0+2", "A", "BCDE", 63},
      {"A2+1", "", "BCDE", 64},  // A finishes at 4 tokens
      {"D0+2", "", "BCE", 64},   // priority -1 first
      {"B0+2", "", "CE", 64},    // then the two of priority 0 in arrival order
      {"E0+2", "", "C", 64},
      {"C0+2", "", "", 64},
  });
}

TEST(Scheduler, ABetterPriorityTakesTheSlotOfTheLowestRunningOne) {
  // Two slots held by A (priority 1) and B (priority 2); C (priority 0) arrives: B, the lowest, is preempted
  // for it. D (priority 2, like B) does not preempt anyone.
  Harness h({/*max_num_seqs=*/2, 64, false}, 64, 4);
  h.AddWithPriority('A', 2, 4, 1);
  h.AddWithPriority('B', 2, 4, 2);
  CheckTable(h, {{"A0+2 B0+2", "AB", "", 62}});
  h.AddWithPriority('C', 2, 1, 0);
  h.AddWithPriority('D', 2, 1, 2);
  CheckTable(h, {
      {"A2+1 C0+2 !B", "A", "BD", 63},  // C is admitted in the same step and finishes at 3 tokens
      {"A3+1 B0+3", "AB", "D", 62},     // B comes back (first in line among equals) before D
      {"A4+1 B3+1", "B", "D", 63},      // A finishes at 6 tokens
      {"B4+1 D0+2", "", "", 64},        // B finishes at 6, D at 3
  });
}

TEST(Scheduler, PreemptsTheLowestPriorityNewestFirstWhenBlocksRunOut) {
  // 8 blocks of 2 tokens. A (priority 0), B and C (priority 3) grow; when the pool runs out, C (lowest priority,
  // newest) goes first, then B.
  Harness h({4, 64, false}, 8, 2);
  h.AddWithPriority('A', 4, 8, 0);
  h.AddWithPriority('B', 2, 8, 3);
  h.AddWithPriority('C', 2, 8, 3);
  CheckTable(h, {
      {"A0+4 B0+2 C0+2", "ABC", "", 4},
      {"A4+1 B2+1 C2+1", "ABC", "", 1},
      {"A5+1 B3+1 C3+1", "ABC", "", 1},
      {"A6+1 B4+1 !C", "AB", "C", 1},  // A takes the last free block, B needs one: C is preempted (its 2 come back)
  });
}

TEST(Scheduler, AWaitingRequestsPriorityImprovesWithItsWait) {
  // Aging one step per 2 s: B (priority 3) has waited 7 s when C (priority 0) arrives: B's effective priority is
  // 0 by then and it arrived first, so it is admitted first. Without aging C would go first.
  for (const double aging : {2.0, 0.0}) {
    SCOPED_TRACE(aging);
    SchedulerConfig config{/*max_num_seqs=*/1, 64, false};
    config.priority_aging_seconds = aging;
    Harness h(config, 64, 4);
    h.AddWithPriority('A', 2, 2, -9);
    const Sequence* b = h.AddWithPriority('B', 2, 1, 3);
    h.Advance(7);
    h.AddWithPriority('C', 2, 1, 0);
    EXPECT_EQ(h.scheduler().EffectivePriority(*b, h.now()), aging > 0 ? 0 : 3);
    EXPECT_EQ(h.Step(), "A0+2");
    EXPECT_EQ(h.Step(), "A2+1");
    EXPECT_EQ(h.Step(), aging > 0 ? "B0+2" : "C0+2");
    EXPECT_EQ(h.Step(), aging > 0 ? "C0+2" : "B0+2");
  }
}

// Background sequences (shadow scoring) use only what live ones leave: budget, slots and blocks.
TEST(Scheduler, BackgroundWorkWaitsForStepsWithoutLiveWork) {
  // By default a step with live tokens has none of background work; a step has at most
  // background_tokens_per_step of it (32 here).
  SchedulerConfig config{4, 64, false};
  config.background_tokens_per_step = 32;
  Harness h(config, 64, 4);
  h.Add('S', 40, 1, 0, {}, /*background=*/true);
  h.Add('A', 2, 3);
  CheckTable(h, {
      {"A0+2", "A", "", 63},
      {"A2+1", "A", "", 63},
      {"A3+1", "", "", 64},    // A finishes at 5 tokens
      {"S0+32", "S", "", 56},  // alone, 32 tokens a step
      {"S32+8", "", "", 64},
  });
}

TEST(Scheduler, BackgroundWorkBesideLiveWorkUsesTheSpareBudget) {
  SchedulerConfig config{4, 8, false};
  config.background_tokens_beside_live = 8;
  Harness h(config, 32, 4);
  h.Add('S', 12, 1, 0, {}, /*background=*/true);  // scores 12 tokens (finishes when its prompt completes)
  h.Add('A', 10, 2);
  CheckTable(h, {
      {"A0+8", "A", "", 30},            // the live prompt takes the whole budget although S came first
      {"A8+2 S0+6", "AS", "", 27},      // S gets what A leaves
      {"A10+1 S6+6", "", "", 32},       // A finishes at 12 tokens, S at its 13th
  });
}

TEST(Scheduler, BackgroundWorkBesideLiveWorkIsCapped) {
  // Beside live decodes, background work gets background_tokens_beside_live (3 here); alone,
  // background_tokens_per_step (8 by default).
  SchedulerConfig config{4, 64, false};
  config.background_tokens_beside_live = 3;
  Harness h(config, 64, 4);
  h.Add('A', 2, 3);
  h.Add('S', 20, 1, 0, {}, /*background=*/true);
  CheckTable(h, {
      {"A0+2 S0+3", "AS", "", 62},
      {"A2+1 S3+3", "AS", "", 61},
      {"A3+1 S6+3", "S", "", 61},   // A finishes at 5 tokens
      {"S9+8", "S", "", 59},        // alone
      {"S17+3", "", "", 64},
  });
}

TEST(Scheduler, LiveWorkPreemptsOlderBackgroundWorkFirst) {
  // 5 blocks of 2. S (background) runs alone, then A (live) arrives and fills the pool.
  Harness h({4, 64, false}, 5, 2);
  h.Add('S', 3, 10, 0, {}, /*background=*/true);
  EXPECT_EQ(h.Step(), "S0+3");
  h.Add('A', 6, 5);
  EXPECT_EQ(h.Step(), "A0+6");  // S holds its blocks but computes nothing beside live work
  EXPECT_EQ(h.Running(), "SA");
  // A needs a 4th block: S is preempted although it is older (a live victim would be A itself).
  EXPECT_EQ(h.Step(), "A6+1 !S");
  EXPECT_EQ(h.Running(), "A");
  EXPECT_EQ(h.BackgroundWaiting(), "S");
  EXPECT_EQ(h.Waiting(), "");
}

TEST(Scheduler, ALiveRequestTakesABackgroundSlot) {
  Harness h({/*max_num_seqs=*/1, 64, false}, 32, 4);
  h.Add('S', 4, 10, 0, {}, /*background=*/true);
  EXPECT_EQ(h.Step(), "S0+4");
  h.Add('A', 4, 2);
  EXPECT_EQ(h.Step(), "A0+4 !S");  // one slot: S gives it up
  EXPECT_EQ(h.Step(), "A4+1");     // A finishes at 6 tokens; S waits (nothing is admitted in a preempting step)
  EXPECT_EQ(h.Step(), "S0+5");     // S comes back and recomputes its tokens
  EXPECT_EQ(h.BackgroundWaiting(), "");
}

TEST(Scheduler, CancelledSequencesLeaveAndFreeTheirBlocks) {
  Harness h({4, 64, false}, 16, 4);
  Sequence* a = h.Add('A', 6, 10);
  h.Add('B', 5, 10);
  CheckTable(h, {{"A0+6 B0+5", "AB", "", 12}});
  h.scheduler().Remove(a);  // cancelled
  CheckTable(h, {{"B5+1", "B", "", 14}, {"B6+1", "B", "", 14}});
}

// Sequences of at most max_loras adapters run at once. The first LoRA sequence that must wait holds back the LoRA
// sequences behind it (C, of the adapter in use, does not join A), so the adapter in use drains and B gets its turn;
// a sequence without an adapter (D) goes around it.
TEST(Scheduler, SequencesOfAtMostMaxLorasAdaptersRunAndTheFirstToWaitHoldsBackLaterOnes) {
  Harness h(SchedulerConfig{.max_num_seqs = 8, .max_num_batched_tokens = 64, .enable_prefix_caching = false, .max_loras = 1}, 64, 4);
  h.Add('A', 2, 3)->lora = 1;
  h.Add('B', 2, 1)->lora = 2;
  h.Add('C', 2, 1)->lora = 1;
  h.Add('D', 2, 1);
  CheckTable(h, {
      {"A0+2 D0+2", "A", "BC", 63},  // D finishes at once
      {"A2+1", "A", "BC", 63},
      {"A3+1", "", "BC", 64},  // A finishes: adapter 1 is out of use
      {"B0+2", "", "C", 64},   // B's adapter now; C waits for it to drain
      {"C0+2", "", "", 64},
  });
  EXPECT_EQ(h.scheduler().lora_deferred_admissions(), 7);  // B three times, C four

  // Without a bound, every adapter runs at once.
  Harness unbounded(SchedulerConfig{.max_num_seqs = 8, .max_num_batched_tokens = 64, .enable_prefix_caching = false}, 64, 4);
  unbounded.Add('A', 2, 3)->lora = 1;
  unbounded.Add('B', 2, 1)->lora = 2;
  EXPECT_EQ(unbounded.Step(), "A0+2 B0+2");
}

// A live sequence of strictly better priority than every running sequence of an adapter takes that adapter's place
// (its sequences preempted, first in line to come back); one of equal priority waits.
TEST(Scheduler, ABetterPriorityTakesThePlaceOfAnAdapterInUse) {
  Harness h(SchedulerConfig{.max_num_seqs = 8, .max_num_batched_tokens = 64, .enable_prefix_caching = false, .max_loras = 1}, 64, 4);
  h.Add('A', 2, 4)->lora = 1;
  h.Add('B', 2, 4)->lora = 1;
  CheckTable(h, {{"A0+2 B0+2", "AB", "", 62}});
  h.AddWithPriority('C', 2, 1, 0)->lora = 2;  // as urgent as A and B: it waits for adapter 1 to drain
  CheckTable(h, {{"A2+1 B2+1", "AB", "C", 62}});
  h.AddWithPriority('X', 2, 1, -1)->lora = 3;  // more urgent than both: adapter 1's sequences make way
  CheckTable(h, {{"X0+2 !B !A", "", "ABC", 64},  // X finishes at once (the newest preempted first)
                 {"A0+4 B0+4", "AB", "C", 62}});
}

TEST(Scheduler, PrefixCacheReusesFullBlocksOfTheSameVariantOnly) {
  Harness h({4, 64, true}, 32, 4);
  h.Add('A', 10, 1, /*first_token=*/100);
  CheckTable(h, {{"A0+10", "", "", 32}});  // A's two full blocks stay cached after it finishes
  EXPECT_EQ(h.allocator().num_cached(), 2);
  h.Add('B', 11, 1, 100);  // same first 10 tokens
  Variant arach;
  arach.arach = true;
  h.Add('C', 11, 1, 100, arach);  // same tokens, another variant
  CheckTable(h, {{"B8+3 C0+11", "", "", 32}});  // B starts at token 8: two blocks reused; C computes all
  EXPECT_EQ(h.scheduler().prefix_cache_hits(), 2);
}

TEST(Scheduler, PrefixCacheReusesBlocksWithinTheirCacheNamespaceOnly) {
  Harness h({4, 64, true}, 32, 4);
  const uint64_t tenant = CacheNamespaceOf("tenant-a salt");
  ASSERT_NE(tenant, 0u);
  ASSERT_EQ(CacheNamespaceOf(""), 0u);
  ASSERT_NE(CacheNamespaceOf("tenant-b salt"), tenant);
  h.Add('A', 10, 1, /*first_token=*/100)->cache_namespace = tenant;
  CheckTable(h, {{"A0+10", "", "", 32}});
  h.Add('B', 11, 1, 100);                                                // the shared namespace: nothing found
  h.Add('C', 11, 1, 100)->cache_namespace = CacheNamespaceOf("tenant-b salt");  // another salt: nothing found
  h.Add('D', 11, 1, 100)->cache_namespace = tenant;                      // the same salt: A's two blocks
  CheckTable(h, {{"B0+11 C0+11 D8+3", "", "", 32}});
  EXPECT_EQ(h.scheduler().prefix_cache_hits(), 2);
  h.Add('E', 11, 1, 100);  // B registered its blocks in the shared namespace, where E finds them
  CheckTable(h, {{"E8+3", "", "", 32}});
  EXPECT_EQ(h.scheduler().prefix_cache_hits(), 4);
}

TEST(Scheduler, AWaitingSequenceWaitsForTheBlockARunningOneIsComputing) {
  // B has A's prompt: admitted beside A it would compute the same blocks again, so it waits a step and reuses them.
  // C (the same tokens under another variant) and D (other tokens) do not wait; D goes first although B came earlier.
  Harness h({4, 40, true}, 64, 4);
  h.Add('A', 16, 2, /*first_token=*/100);
  h.Add('B', 16, 2, 100);
  Variant arach;
  arach.arach = true;
  h.Add('C', 16, 2, 100, arach);
  h.Add('D', 6, 2, 500);
  CheckTable(h, {{"A0+16 C0+16 D0+6", "ACD", "B", 54},
                 {"A16+1 C16+1 D6+1 B12+4", "B", "", 60}});  // B: three of A's blocks (the last token is computed)
  EXPECT_EQ(h.scheduler().deferred_admissions(), 1);
  EXPECT_EQ(h.scheduler().prefix_cache_hits(), 3);
}

TEST(Scheduler, LiveWorkDoesNotWaitForABlockBackgroundWorkIsComputing) {
  // Background work computes a few tokens a step (here 8 beside live work); a live sequence with its prompt computes
  // the blocks itself rather than wait for them.
  SchedulerConfig config{4, 64, true};
  config.background_tokens_per_step = 8;
  Harness h(config, 64, 4);
  h.Add('S', 16, 1, 100, {}, /*background=*/true);
  CheckTable(h, {{"S0+8", "S", "", 62}});
  h.Add('L', 16, 1, 100);
  CheckTable(h, {{"L8+8", "S", "", 62}});  // L found S's two computed blocks, computes the rest itself (and ends)
  EXPECT_EQ(h.scheduler().deferred_admissions(), 0);
}

TEST(Scheduler, SiblingsOfALongChunkedPromptWaitUntilItsBlocksAreComputed) {
  // A 24-token prompt computed 16 tokens a step: in the step that computes A's last 8, its two siblings (found
  // four cached blocks) would compute the next ones again with the budget left; they wait, then compute only the
  // last block themselves.
  Harness h({4, 16, true}, 64, 4);
  h.Add('A', 24, 1, 100);
  h.Add('B', 24, 1, 100);
  h.Add('C', 24, 1, 100);
  CheckTable(h, {{"A0+16", "A", "BC", 60},
                 {"A16+8", "", "BC", 64},
                 {"B20+4 C20+4", "", "", 64}});
  EXPECT_EQ(h.scheduler().deferred_admissions(), 2);
  EXPECT_EQ(h.scheduler().prefix_cache_hits(), 10) << "counted when admitted, not when found and given back";
}

TEST(Scheduler, AWholeCachedPromptStillComputesItsLastToken) {
  Harness h({4, 64, true}, 32, 4);
  h.Add('A', 8, 1, 7);
  CheckTable(h, {{"A0+8", "", "", 32}});
  h.Add('B', 8, 1, 7);
  CheckTable(h, {{"B4+4", "", "", 32}});  // only the first block is reused: the last token needs logits
}

TEST(Scheduler, SlidingWindowGivesBackTheBlocksBeforeTheWindow) {
  // Window 6, blocks of 4: after computing n tokens the next query sees [n - 5, n], so blocks wholly
  // before n - 5 go back to the pool while the sequence runs.
  Harness h({/*max_num_seqs=*/4, /*max_num_batched_tokens=*/8, /*enable_prefix_caching=*/false, /*sliding_window=*/6}, 32, 4);
  Sequence* a = h.Add('A', 10, 8);
  CheckTable(h, {
      {"A0+8", "A", "", 30},    // positions 0..7 in 2 blocks; the next query (8) sees 3..8: nothing to give back
      {"A8+2", "A", "", 30},    // 3 blocks; the next query (10) sees 5..10: block 0 goes back
      {"A10+1", "A", "", 30},   // next query 11 sees 6..11: block 0 only
      {"A11+1", "A", "", 30},
      {"A12+1", "A", "", 30},   // a 4th block for position 12; next query 13 sees 8..13: block 1 goes back too
  });
  EXPECT_EQ(a->blocks.num_held(), 2);
  EXPECT_EQ(a->blocks.blocks().size(), 4u) << "released blocks keep their place in the table";
  CheckTable(h, {{"A13+1", "A", "", 30}, {"A14+1", "A", "", 30}, {"A15+1", "A", "", 30}, {"A16+1", "", "", 32}});
}

TEST(Scheduler, SlidingWindowBlocksStayInThePrefixCache) {
  Harness h({4, 64, /*enable_prefix_caching=*/true, /*sliding_window=*/4}, 32, 4);
  h.Add('A', 13, 1, /*first_token=*/100);
  CheckTable(h, {{"A0+13", "", "", 32}});  // its first blocks were given back early, registered first
  EXPECT_EQ(h.allocator().num_cached(), 3);
  h.Add('B', 14, 1, 100);
  CheckTable(h, {{"B12+2", "", "", 32}});  // the whole cached prefix is reused
  EXPECT_EQ(h.scheduler().prefix_cache_hits(), 3);
}

// Random arrivals, lengths, cancellations and a small pool: invariants hold at every step and no block leaks.
TEST(Scheduler, NoBlockLeaksUnderRandomFinishCancelAndPreemption) {
  int64_t preemptions = 0, prefix_hits = 0;
  for (uint32_t seed = 0; seed < 30; ++seed) {
    std::mt19937 rng(seed);
    const bool caching = seed % 2 == 0;
    const int window = seed % 3 == 0 ? 3 + static_cast<int>(rng() % 10) : 0;  // some runs with a sliding window
    Harness h({1 + static_cast<int>(rng() % 6), 4 + static_cast<int>(rng() % 40), caching, window}, 24, 4);
    std::vector<Sequence*> live;
    int added = 0;
    for (int step = 0; step < 20000 && (added < 40 || h.scheduler().HasWork()); ++step) {
      if (added < 40 && rng() % 3 == 0) {
        live.push_back(h.Add(static_cast<char>('A' + added % 50), 1 + static_cast<int>(rng() % 30), 1 + static_cast<int>(rng() % 40),
                             static_cast<int>(rng() % 3) * 50, {}, /*background=*/rng() % 4 == 0));
        ++added;
      }
      if (!live.empty() && rng() % 17 == 0) {  // cancel a random sequence
        Sequence* victim = live[rng() % live.size()];
        if (victim->state != SequenceState::kFinished) h.scheduler().Remove(victim);
      }
      h.Step();
      int held = 0;
      for (Sequence* s : h.scheduler().running()) {
        ASSERT_GE(s->blocks.capacity(), s->num_computed);
        held += s->blocks.num_held();
      }
      for (Sequence* s : h.scheduler().waiting()) {
        ASSERT_TRUE(s->blocks.blocks().empty()) << "waiting sequences hold no blocks";
      }
      for (Sequence* s : h.scheduler().background_waiting()) {
        ASSERT_TRUE(s->blocks.blocks().empty()) << "waiting background sequences hold no blocks";
        ASSERT_TRUE(s->background);
      }
      ASSERT_LE(h.allocator().num_used(), held) << "every used block is held by a running sequence";
    }
    ASSERT_FALSE(h.scheduler().HasWork()) << "seed " << seed << ": work left";
    EXPECT_EQ(h.allocator().num_used(), 0) << "seed " << seed;
    EXPECT_EQ(h.allocator().num_free(), 24) << "seed " << seed;
    preemptions += h.scheduler().num_preemptions();
    prefix_hits += h.scheduler().prefix_cache_hits();
  }
  EXPECT_GT(preemptions, 0) << "the pool must be small enough to force preemption";
  EXPECT_GT(prefix_hits, 0) << "shared prefixes must hit the cache";
}

// Speculative decoding: the engine appends drafts to a decoding sequence before a step (here by hand).
void AddDrafts(Sequence* seq, int count) {
  for (int i = 0; i < count; ++i) seq->tokens.push_back(5000 + i);
  seq->num_draft += count;
}

TEST(SchedulerDrafts, ADecodeChunkTakesItsDraftsOrAsManyAsTheBudgetLeaves) {
  Harness h({4, /*max_num_batched_tokens=*/4, false}, 32, 4);
  Sequence* a = h.Add('A', 3, 100);
  EXPECT_EQ(h.Step(), "A0+3");  // the prompt; A has its first token (4 tokens, 3 computed)
  AddDrafts(a, 5);
  const ScheduledBatch batch = h.scheduler().Schedule(h.now());
  ASSERT_EQ(batch.chunks.size(), 1u);
  EXPECT_EQ(batch.chunks[0].start, 3);
  EXPECT_EQ(batch.chunks[0].num_tokens, 4);  // the token and 3 drafts: the last 2 did not fit
  EXPECT_TRUE(batch.chunks[0].completes);
  EXPECT_EQ(a->num_draft, 3);
  EXPECT_EQ(a->tokens.size(), 7u);
  h.scheduler().CompleteStep(batch);
  EXPECT_EQ(a->num_computed, 7);
  EXPECT_EQ(a->num_generated(), 1) << "drafts are not generated tokens";
}

TEST(SchedulerDrafts, DraftsGiveWayBeforeAnotherSequenceIsPreempted) {
  // 3 blocks of 4: A and B hold one each; A's token and 6 drafts would need two more.
  Harness h({4, 64, false}, 3, 4);
  Sequence* a = h.Add('A', 3, 100);
  h.Add('B', 3, 100);
  EXPECT_EQ(h.Step(), "A0+3 B0+3");
  AddDrafts(a, 6);
  const ScheduledBatch batch = h.scheduler().Schedule(h.now());
  EXPECT_TRUE(batch.preempted.empty());
  ASSERT_EQ(batch.chunks.size(), 2u);
  EXPECT_EQ(batch.chunks[0].num_tokens, 5);  // the token and 4 drafts: positions 3..7, the one free block
  EXPECT_EQ(a->num_draft, 4);
}

TEST(SchedulerDrafts, APreemptedSequenceLosesItsDrafts) {
  // 4 blocks of 2: A and B hold two each; A's next token needs a third, so B (the newest) is preempted.
  Harness h({4, 64, false}, 4, 2);
  h.Add('A', 4, 100);
  Sequence* b = h.Add('B', 3, 100);
  EXPECT_EQ(h.Step(), "A0+4 B0+3");
  AddDrafts(b, 1);  // B's token and draft fill its second block
  const ScheduledBatch batch = h.scheduler().Schedule(h.now());
  ASSERT_EQ(batch.preempted.size(), 1u);
  EXPECT_EQ(batch.preempted[0], b);
  EXPECT_EQ(b->num_draft, 0);
  EXPECT_EQ(b->tokens.size(), 4u) << "the prompt and its one generated token";
}

TEST(SchedulerDrafts, OnlyVerifiedTokensReachThePrefixCache) {
  Harness h({4, 64, /*enable_prefix_caching=*/true}, 32, 4);
  Sequence* a = h.Add('A', 3, 100);
  EXPECT_EQ(h.Step(), "A0+3");
  AddDrafts(a, 5);  // positions 4..8: blocks 1 and 2 hold drafts
  h.scheduler().CompleteStep(h.scheduler().Schedule(h.now()));
  EXPECT_EQ(a->num_registered_blocks, 1);
  EXPECT_EQ(h.allocator().num_cached(), 1);
}

TEST(SchedulerDrafts, ASlidingWindowKeepsTheBlocksARejectedDraftsQueryNeeds) {
  // Window 4, blocks of 4: after the drafts the next query may be position 9 (the first draft rejected), which sees 6..9.
  Harness h({4, 64, false, /*sliding_window=*/4}, 32, 4);
  Sequence* a = h.Add('A', 8, 100);
  EXPECT_EQ(h.Step(), "A0+8");
  AddDrafts(a, 7);  // positions 9..15
  h.scheduler().CompleteStep(h.scheduler().Schedule(h.now()));
  EXPECT_EQ(a->blocks.num_held(), 3) << "only block 0 (positions 0..3) is before the window of position 9";
}

TEST(SchedulerDrafts, DraftsLeaveEveryOtherRunningSequenceItsToken) {
  Harness h({4, /*max_num_batched_tokens=*/6, false}, 32, 4);
  Sequence* a = h.Add('A', 3, 100);
  h.Add('B', 3, 100);
  h.Add('C', 3, 100);
  EXPECT_EQ(h.Step(), "A0+3 B0+3");  // C waits for the budget
  EXPECT_EQ(h.Step(), "A3+1 B3+1 C0+3");
  AddDrafts(a, 8);
  EXPECT_EQ(h.Step().substr(0, 5), "A4+4 ") << "A's token and 3 drafts; B and C a token each";
}

}  // namespace
}  // namespace arach
