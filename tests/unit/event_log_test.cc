// EventLog (a streamed answer's events kept for readers that come at any time) and ServerSentEvents recording into
// one: events read back in order from any index, a reader waiting for the next event or the close, nothing recorded
// after the close, and the store counting a log's bytes with its entry (leaving a log out that does not fit).
#include "server/event_log.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "server/http/server_sent_events.h"
#include "server/response_store.h"

namespace arach::server {
namespace {

using std::chrono::milliseconds;

TEST(EventLog, ReadsBackInOrderFromAnyIndex) {
  EventLog log;
  log.Append("response.created", R"({"sequence_number":0})");
  log.Append("response.queued", R"({"sequence_number":1})");
  log.Append("", "[DONE]");
  EXPECT_EQ(log.size(), 3u);
  EXPECT_EQ(log.bytes(), std::string("response.created").size() + 21 + std::string("response.queued").size() + 21 + 6);
  const EventLog::Read all = log.ReadFrom(0, milliseconds(0));
  ASSERT_EQ(all.events.size(), 3u);
  EXPECT_EQ(all.events[0].name, "response.created");
  EXPECT_EQ(all.events[1].payload, R"({"sequence_number":1})");
  EXPECT_EQ(all.events[2].name, "");
  EXPECT_FALSE(all.closed);
  const EventLog::Read tail = log.ReadFrom(2, milliseconds(0));
  ASSERT_EQ(tail.events.size(), 1u);
  EXPECT_EQ(tail.events[0].payload, "[DONE]");
  const EventLog::Read beyond = log.ReadFrom(7, milliseconds(1));
  EXPECT_TRUE(beyond.events.empty());
  EXPECT_FALSE(beyond.closed);
}

TEST(EventLog, AReaderWaitsForTheNextEventOrTheClose) {
  EventLog log;
  log.Append("a", "1");
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    log.Append("b", "2");
    std::this_thread::sleep_for(milliseconds(50));
    log.Close();
  });
  const EventLog::Read next = log.ReadFrom(1, milliseconds(30000));
  ASSERT_EQ(next.events.size(), 1u) << "woken by the append, not by the wait's end";
  EXPECT_EQ(next.events[0].name, "b");
  const EventLog::Read end = log.ReadFrom(2, milliseconds(30000));
  writer.join();
  EXPECT_TRUE(end.events.empty());
  EXPECT_TRUE(end.closed) << "woken by the close";
  log.Append("c", "3");
  EXPECT_EQ(log.size(), 2u) << "nothing is recorded after the close";
  const EventLog::Read closed = log.ReadFrom(0, milliseconds(30000));
  EXPECT_EQ(closed.events.size(), 2u);
  EXPECT_TRUE(closed.closed);
}

// A stream written into a log: named and data events as written, no keep-alives, and the end closes it.
TEST(EventLog, ServerSentEventsRecordIntoIt) {
  EventLog log;
  http::ServerSentEvents events(log);
  EXPECT_TRUE(events.Event("response.created", "{}"));
  EXPECT_TRUE(events.KeepAlive());
  EXPECT_TRUE(events.Data(R"({"x":1})"));
  EXPECT_FALSE(events.ended());
  EXPECT_TRUE(events.Done());
  EXPECT_TRUE(events.ended());
  const EventLog::Read read = log.ReadFrom(0, milliseconds(0));
  EXPECT_TRUE(read.closed);
  ASSERT_EQ(read.events.size(), 3u);
  EXPECT_EQ(read.events[0].name, "response.created");
  EXPECT_EQ(read.events[1].name, "");
  EXPECT_EQ(read.events[1].payload, R"({"x":1})");
  EXPECT_EQ(read.events[2].payload, "[DONE]");
}

TEST(EventLog, TheStoreCountsItsBytesWithItsEntry) {
  const ResponseStore::Entry plain{"alice", {{"id", "resp_1"}}, nlohmann::ordered_json::array(), nlohmann::json::array(), nullptr};
  ResponseStore store(1 << 20);
  store.Put("resp_1", plain);
  const size_t without = store.bytes();
  auto log = std::make_shared<EventLog>();
  log->Append("response.created", std::string(1000, 'x'));
  ResponseStore::Entry streamed = plain;
  streamed.events = log;
  store.Put("resp_1", streamed);
  EXPECT_EQ(store.bytes(), without + log->bytes());
  ASSERT_TRUE(store.Get("resp_1", "alice").has_value());
  EXPECT_EQ(store.Get("resp_1", "alice")->events, log) << "the entry shares the log";
  EXPECT_FALSE(store.Get("resp_1", "alice")->events_dropped);
  ResponseStore small(without + 100);
  small.Put("resp_1", streamed);
  ASSERT_TRUE(small.Get("resp_1", "alice").has_value()) << "the response is kept without the events that do not fit";
  EXPECT_EQ(small.Get("resp_1", "alice")->events, nullptr);
  EXPECT_TRUE(small.Get("resp_1", "alice")->events_dropped);
  EXPECT_EQ(small.bytes(), without);
  ResponseStore tiny(without - 1);
  tiny.Put("resp_1", streamed);
  EXPECT_EQ(tiny.count(), 0u) << "nor the response where that does not fit either";
}

}  // namespace
}  // namespace arach::server
