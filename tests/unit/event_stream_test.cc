// EventStreamReader (the one reader of the HTTP API's server-sent events): data events, the Responses API's named
// events, keep-alive comments skipped, events split across reads, several data lines joined, and hanging up.
#include "client/event_stream.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace arach::client {
namespace {

TEST(EventStreamReader, PassesOnTheDataOfEveryEventInOrder) {
  EventStreamReader reader;
  std::vector<std::string> data;
  const auto keep = [&](const std::string& payload) {
    data.push_back(payload);
    return true;
  };
  EXPECT_TRUE(reader.Feed("data: {\"a\":1}\n\n: keep-alive\n\nevent: response.created\ndata: {\"b\"", keep));
  EXPECT_EQ(data, std::vector<std::string>({"{\"a\":1}"})) << "the named event is not complete yet";
  EXPECT_TRUE(reader.Feed(":2}\n\ndata: line one\ndata: line two\n\nevent: ping\n\ndata: [DONE]\n\n", keep));
  EXPECT_EQ(data, std::vector<std::string>({"{\"a\":1}", "{\"b\":2}", "line one\nline two", "[DONE]"}));
}

TEST(EventStreamReader, StopsWhenTheCallerHangsUp) {
  EventStreamReader reader;
  int seen = 0;
  EXPECT_FALSE(reader.Feed("data: 1\n\ndata: 2\n\ndata: 3\n\n", [&](const std::string&) { return ++seen < 2; }));
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace arach::client
