// Who may call: the API keys of --api_key_file and --api_key, their scopes, limits and default priority.
//
// A key file has one key per line, `#` starting a comment:
//   NAME:SECRET[:SCOPE,SCOPE...[:rpm=N,tpm=N,priority=N]]
// NAME (letters, digits, '.', '_', '-') is what logs and metrics show; the SECRET is what a client sends
// (Authorization: Bearer SECRET over HTTP, the `authorization` metadata over gRPC) and is kept only as its
// SHA-256, never logged or exported. Scopes: `diagnostics` (attention diagnostics and other costly
// extensions) and `experiment` (choose the variant while an A/B experiment runs), or `all`. rpm / tpm: requests
// and tokens (prompt + max_tokens) per minute, 0 or absent for no limit; priority: the default priority of
// the key's requests (lower first). --api_key SECRET adds one key named "default" with every scope.
// With no key configured the server is open: every call is allowed with every scope.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace arach::server {

enum Scope : uint32_t {
  kScopeDiagnostics = 1u << 0,
  kScopeExperiment = 1u << 1,
  kScopeAdapters = 1u << 2,  // loading and unloading LoRA adapters at run time (--allow_runtime_lora_updating)
};
inline constexpr uint32_t kAllScopes = kScopeDiagnostics | kScopeExperiment | kScopeAdapters;
// "diagnostics", "experiment", "adapters".
const char* ScopeName(Scope scope);

struct KeyLimits {
  int64_t requests_per_minute = 0;  // 0: no limit
  int64_t tokens_per_minute = 0;    // 0: no limit
  bool any() const { return requests_per_minute > 0 || tokens_per_minute > 0; }
};

using SecretDigest = std::array<uint8_t, 32>;  // SHA-256

struct ApiKey {
  std::string name;
  SecretDigest digest{};
  uint32_t scopes = 0;
  KeyLimits limits;
  std::optional<int> priority;  // the default priority of the key's requests
};

// SHA-256 of a secret.
SecretDigest DigestOf(absl::string_view secret);

// Parses key-file text. Errors name `source` and the line (never the secret): a malformed line, an unknown
// scope or limit, a bad name, an empty secret, a name or secret given twice.
absl::StatusOr<std::vector<ApiKey>> ParseApiKeyFile(absl::string_view text, const std::string& source);

// The configured keys: read at start, read again by Reload() (SIGHUP). Thread-safe; a reload that fails
// keeps the keys in use.
class ApiKeys {
 public:
  // `file` may be empty (no key file); `single_secret` (--api_key) may be empty.
  static absl::StatusOr<std::unique_ptr<ApiKeys>> Load(const std::string& file, const std::string& single_secret);

  // No key configured: the server is open.
  bool open() const;
  size_t size() const;
  // The keys' names (for logs and metrics).
  std::vector<std::string> names() const;
  // The key whose secret is `presented`. Every key is compared, each in constant time on the digests, so the
  // time does not tell which key nearly matched or how long a secret is.
  std::optional<ApiKey> Find(absl::string_view presented) const;
  // Reads the key file again; the keys of --api_key stay.
  absl::Status Reload();

 private:
  ApiKeys(std::string file, std::optional<ApiKey> single) : file_(std::move(file)), single_(std::move(single)) {}

  const std::string file_;
  const std::optional<ApiKey> single_;
  mutable std::mutex mutex_;  // guards keys_ (swapped whole on reload)
  std::shared_ptr<const std::vector<ApiKey>> keys_;
};

}  // namespace arach::server
