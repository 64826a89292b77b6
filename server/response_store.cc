#include "server/response_store.h"

#include <utility>

namespace arach::server {

void ResponseStore::Put(const std::string& id, Entry entry) {
  const size_t bytes = id.size() + entry.owner.size() + entry.response.dump().size() + entry.conversation.dump().size();
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(id); it != entries_.end()) DropLocked(it);
  if (bytes > max_bytes_) return;
  while (bytes_ + bytes > max_bytes_ && !uses_.empty()) DropLocked(entries_.find(uses_.front()));
  uses_.push_back(id);
  entries_.emplace(id, Stored{std::move(entry), bytes, std::prev(uses_.end())});
  bytes_ += bytes;
}

std::optional<ResponseStore::Entry> ResponseStore::Get(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(id);
  if (it == entries_.end() || it->second.entry.owner != owner) return std::nullopt;
  uses_.splice(uses_.end(), uses_, it->second.use);
  return it->second.entry;
}

bool ResponseStore::Delete(const std::string& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(id);
  if (it == entries_.end() || it->second.entry.owner != owner) return false;
  DropLocked(it);
  return true;
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
