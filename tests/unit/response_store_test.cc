#include "server/response_store.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace arach::server {
namespace {

ResponseStore::Entry EntryOf(const std::string& owner, const std::string& text) {
  return {owner, {{"id", "x"}, {"text", text}}, nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}})};
}

// Each entry belongs to its owner: another key neither reads, replaces nor deletes it.
TEST(ResponseStore, AnEntryIsItsOwnersOnly) {
  ResponseStore store(1 << 20);
  store.Put("resp_a", EntryOf("alice", "hi"));
  ASSERT_TRUE(store.Get("resp_a", "alice").has_value());
  EXPECT_EQ(store.Get("resp_a", "alice")->response["text"], "hi");
  EXPECT_EQ(store.Get("resp_a", "alice")->conversation[0]["content"], "hi");
  EXPECT_FALSE(store.Get("resp_a", "bob").has_value());
  EXPECT_FALSE(store.Delete("resp_a", "bob"));
  EXPECT_TRUE(store.Get("resp_a", "alice").has_value()) << "bob's delete left it";
  // The same id (a client may choose its request id) for another key is that key's own entry.
  store.Put("resp_a", EntryOf("bob", "other"));
  EXPECT_EQ(store.Get("resp_a", "alice")->response["text"], "hi");
  EXPECT_EQ(store.Get("resp_a", "bob")->response["text"], "other");
  EXPECT_TRUE(store.Delete("resp_a", "bob"));
  EXPECT_TRUE(store.Delete("resp_a", "alice"));
  EXPECT_FALSE(store.Get("resp_a", "alice").has_value());
  EXPECT_EQ(store.bytes(), 0u);
  EXPECT_EQ(store.count(), 0u);
}

// Within the budget the least recently used entry goes first (a read counts as a use); an entry larger than the whole
// budget is not kept, and replacing an entry counts its new size only.
TEST(ResponseStore, TheLeastRecentlyUsedGoFirstWithinTheBudget) {
  const std::string text(200, 'w');
  ResponseStore probe(1 << 20);
  probe.Put("resp_1", EntryOf("k", text));
  const size_t one = probe.bytes();
  ASSERT_GT(one, 400u);
  ResponseStore store(3 * one);
  store.Put("resp_1", EntryOf("k", text));
  store.Put("resp_2", EntryOf("k", text));
  store.Put("resp_3", EntryOf("k", text));
  EXPECT_EQ(store.count(), 3u);
  ASSERT_TRUE(store.Get("resp_1", "k").has_value());  // resp_2 is now the least recently used
  store.Put("resp_4", EntryOf("k", text));
  EXPECT_EQ(store.count(), 3u);
  EXPECT_FALSE(store.Get("resp_2", "k").has_value());
  EXPECT_TRUE(store.Get("resp_1", "k").has_value());
  EXPECT_TRUE(store.Get("resp_3", "k").has_value());
  EXPECT_TRUE(store.Get("resp_4", "k").has_value());
  EXPECT_LE(store.bytes(), 3 * one);
  store.Put("resp_3", EntryOf("k", text));  // replaced, not counted twice
  EXPECT_EQ(store.count(), 3u);
  EXPECT_EQ(store.bytes(), 3 * one);
  store.Put("resp_big", EntryOf("k", std::string(4 * one, 'b')));
  EXPECT_FALSE(store.Get("resp_big", "k").has_value()) << "larger than the whole budget";
  EXPECT_EQ(store.count(), 3u) << "and nothing dropped for it";
}

// A background response is not dropped for room while it runs (its client polls it): the least recently used of the
// others go, and the budget may be passed while only running ones are left. Its final state replaces it and may go.
TEST(ResponseStore, ARunningResponseStaysTillItsFinalStateReplacesIt) {
  const std::string text(200, 'w');
  ResponseStore probe(1 << 20);
  probe.Put("resp_1", EntryOf("k", text));
  const size_t one = probe.bytes();
  ResponseStore store(2 * one);
  ResponseStore::Entry running = EntryOf("k", text);
  running.running = true;
  store.Put("resp_r", running);
  store.Put("resp_2", EntryOf("k", text));
  store.Put("resp_3", EntryOf("k", text));  // the least recently used is the running one: resp_2 goes instead
  EXPECT_TRUE(store.Get("resp_r", "k").has_value());
  EXPECT_FALSE(store.Get("resp_2", "k").has_value());
  EXPECT_TRUE(store.Get("resp_3", "k").has_value());
  ResponseStore::Entry also_running = EntryOf("k", text);
  also_running.running = true;
  store.Put("resp_a", also_running);  // resp_3 goes; then only running ones are left, past the budget
  store.Put("resp_4", EntryOf("k", text));
  EXPECT_TRUE(store.Get("resp_r", "k").has_value());
  EXPECT_TRUE(store.Get("resp_a", "k").has_value());
  EXPECT_FALSE(store.Get("resp_3", "k").has_value());
  EXPECT_TRUE(store.Get("resp_4", "k").has_value()) << "the newest is kept: the budget is passed while they run";
  EXPECT_EQ(store.bytes(), 3 * one);
  store.Put("resp_r", EntryOf("k", text));  // its final state: an entry like any
  store.Put("resp_5", EntryOf("k", text));
  EXPECT_FALSE(store.Get("resp_r", "k").has_value()) << "ended, it goes like any other";
  EXPECT_FALSE(store.Get("resp_4", "k").has_value());
  EXPECT_TRUE(store.Get("resp_a", "k").has_value());
  EXPECT_TRUE(store.Get("resp_5", "k").has_value());
  EXPECT_EQ(store.bytes(), 2 * one);
}

// The store's metrics follow its entries, their bytes and the evictions (for sizing --responses_store_bytes).
TEST(ResponseStore, ItsMetricsFollowTheEntriesAndTheEvictions) {
  std::unique_ptr<ServerMetrics> metrics = ServerMetrics::Create();
  const std::string text(200, 'w');
  ResponseStore probe(1 << 20);
  probe.Put("resp_1", EntryOf("k", text));
  const size_t one = probe.bytes();
  ResponseStore store(2 * one + one / 2, metrics.get());  // room for two
  const auto scraped = [&](const std::string& series) {
    const std::string all = metrics->Scrape();
    const size_t at = all.find("\n" + series + "{");
    EXPECT_NE(at, std::string::npos) << series;
    if (at == std::string::npos) return -1.0;
    const size_t value = all.find("} ", at) + 2;
    return std::stod(all.substr(value, all.find('\n', value) - value));
  };
  store.Put("resp_1", EntryOf("k", text));
  store.Put("resp_2", EntryOf("k", text));
  EXPECT_EQ(scraped("arach_responses_stored"), 2);
  EXPECT_EQ(scraped("arach_responses_stored_bytes"), static_cast<double>(store.bytes()));
  EXPECT_EQ(scraped("arach_responses_evicted_total"), 0);
  store.Put("resp_3", EntryOf("k", text));  // resp_1 goes
  EXPECT_EQ(scraped("arach_responses_stored"), 2);
  EXPECT_EQ(scraped("arach_responses_evicted_total"), 1);
  store.Put("resp_4", EntryOf("k", std::string(3 * one, 'x')));  // alone beyond the budget: not kept
  EXPECT_EQ(scraped("arach_responses_evicted_total"), 2);
  EXPECT_EQ(scraped("arach_responses_stored"), 2);
  EXPECT_TRUE(store.Delete("resp_2", "k"));
  EXPECT_EQ(scraped("arach_responses_stored"), 1);
  EXPECT_EQ(scraped("arach_responses_stored_bytes"), static_cast<double>(store.bytes()));
  EXPECT_EQ(scraped("arach_responses_evicted_total"), 2) << "a delete is no eviction";
}

}  // namespace
}  // namespace arach::server
