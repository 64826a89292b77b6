// The Responses API's stored answers (`store: true`, --responses_store_bytes): each response object with the
// conversation items it answered (its input, after those of the response it continued), kept in memory within
// a byte budget, the least recently used dropped first. An answer belongs to the key that made it: only that
// key reads, continues (previous_response_id) or deletes it. Per replica: a fleet behind a router that does not
// keep a conversation on one replica finds it only where it was made.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "nlohmann/json.hpp"
#include "server/event_log.h"
#include "server/metrics.h"

namespace arach::server {

class ResponseStore {
 public:
  struct Entry {
    std::string owner;                   // the name of the key that made it (Caller::key)
    nlohmann::json response;             // the response object as answered
    nlohmann::ordered_json conversation;  // the input items it answered, those of the responses it continued first
    nlohmann::json input_items;           // its own request's input items, as GET .../input_items lists them
    // A streamed background response's events, for the clients that read its stream again (null otherwise). Shared
    // with the response as it runs: its bytes count as they were when the entry was put (its final state is put once
    // every event is in).
    std::shared_ptr<const EventLog> events;
    bool events_dropped = false;  // it had events, left out for room (Put)
    // A background response still running (queued, in progress): never dropped for room, as its client polls it and
    // reads its events; the entry of its final state, which replaces it, may be. The budget may be passed by them.
    bool running = false;
  };

  // `metrics` (may be null) follows the entries, their bytes and the evictions.
  explicit ResponseStore(size_t max_bytes, ServerMetrics* metrics = nullptr) : max_bytes_(max_bytes), metrics_(metrics) {}

  // Keeps `entry` under `id` for its owner (replacing the owner's entry there; another owner's with the same id
  // stays apart), dropping the least recently used beyond the budget (running ones stay). An entry larger than the
  // whole budget is kept without its events where that fits (events_dropped), else not at all.
  void Put(const std::string& id, Entry entry);
  // The entry `id` when `owner` made it (and marks it used); nullopt otherwise, whoever made it.
  std::optional<Entry> Get(const std::string& id, const std::string& owner);
  // Drops the entry `id` when `owner` made it; whether it did.
  bool Delete(const std::string& id, const std::string& owner);

  size_t bytes() const;
  size_t count() const;

 private:
  struct Stored {
    Entry entry;
    size_t bytes = 0;
    std::list<std::string>::iterator use;  // its place in uses_
  };
  void DropLocked(std::unordered_map<std::string, Stored>::iterator it);
  void CountLocked() const;  // the metrics follow entries_ and bytes_

  const size_t max_bytes_;
  ServerMetrics* const metrics_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Stored> entries_;  // by owner and id
  std::list<std::string> uses_;  // their keys, least recently used first
  size_t bytes_ = 0;
};

}  // namespace arach::server
