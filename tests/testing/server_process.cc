#include "tests/testing/server_process.h"

#include <httplib.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <regex>

#include "absl/strings/str_cat.h"

namespace arach::testing {

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& binary, std::vector<std::string> args,
                                                                    std::chrono::seconds timeout) {
  args.insert(args.begin(), binary);
  args.push_back("--listen=127.0.0.1:0");
  args.push_back("--http_listen=127.0.0.1:0");
  int out[2];
  if (::pipe(out) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    std::perror("execv");
    ::_exit(127);
  }
  ::close(out[1]);
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->pid_ = pid;
  const int fd = out[0];
  p->reader_ = std::thread([raw = p.get(), fd] { raw->Drain(fd); });
  const auto end = std::chrono::steady_clock::now() + timeout;
  const std::regex ready("arach-server ready; grpc=(\\S+) http=(\\S+) metrics=(\\S+)");
  while (std::chrono::steady_clock::now() < end) {
    std::smatch match;
    const std::string output = p->Output();
    if (std::regex_search(output, match, ready)) {
      p->grpc_address_ = match[1];
      p->http_address_ = match[2];
      p->metrics_address_ = match[3];
      return p;
    }
    int status;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      p->exited_ = true;
      return absl::InternalError(absl::StrCat("arach-server exited before it was ready:\n", p->Output()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat("arach-server not ready in time:\n", p->Output()));
}

void ServerProcess::Drain(int fd) {
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    std::lock_guard<std::mutex> lock(mutex_);
    output_.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
}

std::string ServerProcess::Output() {
  std::lock_guard<std::mutex> lock(mutex_);
  return output_;
}

long ServerProcess::RssKib() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      long kib = -1;
      status >> kib;
      return kib;
    }
    std::getline(status, key);
  }
  return -1;
}

void ServerProcess::Signal(int signal_number) {
  if (!exited_) ::kill(pid_, signal_number);
}

absl::StatusOr<int> ServerProcess::Wait(std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return absl::InternalError(absl::StrCat("arach-server died by signal ", WTERMSIG(status)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError("arach-server did not exit in time");
}

ServerProcess::~ServerProcess() {
  if (!exited_) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (reader_.joinable()) reader_.join();
}

absl::StatusOr<std::string> HttpGetMetrics(const std::string& address) {
  httplib::Client client(absl::StrCat("http://", address));
  client.set_read_timeout(5, 0);
  httplib::Result result = client.Get("/metrics");
  if (!result) return absl::UnavailableError(absl::StrCat("GET http://", address, "/metrics: ", httplib::to_string(result.error())));
  if (result->status != 200) {
    return absl::InternalError(absl::StrCat("GET /metrics answered ", result->status, ": ", result->body.substr(0, 200)));
  }
  return result->body;
}

absl::StatusOr<PrometheusText> ScrapeMetrics(const ServerProcess& server) {
  auto body = HttpGetMetrics(server.metrics_address());
  if (!body.ok()) return body.status();
  return ParsePrometheusText(*body);
}

}  // namespace arach::testing
