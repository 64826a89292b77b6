#include "server/http/client_connection.h"

#include <poll.h>

namespace arach::server::http {

bool ClientConnection::HungUp() const {
  if (!descriptor_.has_value()) return false;
  pollfd watched{*descriptor_, POLLRDHUP, 0};
  if (poll(&watched, 1, 0) <= 0) return false;
  return (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

void ClientConnections::Remember(const httplib::Request& request, int descriptor) {
  std::lock_guard<std::mutex> lock(mutex_);
  descriptors_.insert_or_assign(&request, descriptor);
}

void ClientConnections::Forget(const httplib::Request* request) {
  std::lock_guard<std::mutex> lock(mutex_);
  descriptors_.erase(request);
}

ClientConnection ClientConnections::Of(const httplib::Request& request) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = descriptors_.find(&request);
  return ClientConnection(found == descriptors_.end() ? std::nullopt : std::optional<int>(found->second));
}

size_t ClientConnections::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return descriptors_.size();
}

}  // namespace arach::server::http
