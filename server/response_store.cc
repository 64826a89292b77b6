#include "server/response_store.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace arach::server {
namespace {

// Entries are kept under their owner and id together: a response id (which a client may choose through its
// request id) never reaches another key's entry.
std::string KeyOf(const std::string& owner, const std::string& id) { return absl::StrCat(owner.size(), ":", owner, id); }

}  // namespace

void ResponseStore::Put(const std::string& id, Entry entry) {
  const std::string key = KeyOf(entry.owner, id);
  size_t bytes = key.size() + entry.response.dump().size() + entry.conversation.dump().size() + entry.input_items.dump().size();
  if (entry.events && bytes + entry.events->bytes() > max_bytes_) {
    entry.events = nullptr;  // (the response itself is what a client must find)
    entry.events_dropped = true;
  }
  if (entry.events) bytes += entry.events->bytes();
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) DropLocked(it);
  if (bytes > max_bytes_) {
    if (metrics_ != nullptr) metrics_->RecordStoredResponseEvicted();
    CountLocked();
    return;
  }
  for (auto use = uses_.begin(); bytes_ + bytes > max_bytes_ && use != uses_.end();) {
    const auto it = entries_.find(*use++);  // (advanced first: a drop erases its place in uses_)
    if (it->second.entry.running) continue;
    DropLocked(it);
    if (metrics_ != nullptr) metrics_->RecordStoredResponseEvicted();
  }
  uses_.push_back(key);
  entries_.emplace(key, Stored{std::move(entry), bytes, std::prev(uses_.end())});
  bytes_ += bytes;
  CountLocked();
}

std::optional<ResponseStore::Entry> ResponseStore::Get(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(KeyOf(owner, id));
  if (it == entries_.end()) return std::nullopt;
  uses_.splice(uses_.end(), uses_, it->second.use);
  return it->second.entry;
}

bool ResponseStore::Delete(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(KeyOf(owner, id));
  if (it == entries_.end()) return false;
  DropLocked(it);
  CountLocked();
  return true;
}

void ResponseStore::CountLocked() const {
  if (metrics_ != nullptr) metrics_->SetStoredResponses(entries_.size(), bytes_);
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t ResponseStore::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void ResponseStore::DropLocked(std::unordered_map<std::string, Stored>::iterator it) {
  bytes_ -= it->second.bytes;
  uses_.erase(it->second.use);
  entries_.erase(it);
}

}  // namespace arach::server
