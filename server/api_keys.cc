#include "server/api_keys.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"

namespace arach::server {
namespace {

absl::Status LineError(const std::string& source, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", what));
}

bool ValidName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// `diagnostics,experiment,adapters` or `all`.
absl::StatusOr<uint32_t> ParseScopes(absl::string_view text, const std::string& source, int line) {
  uint32_t scopes = 0;
  for (absl::string_view scope : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    scope = absl::StripAsciiWhitespace(scope);
    if (scope == "all") {
      scopes |= kAllScopes;
    } else if (scope == ScopeName(kScopeDiagnostics)) {
      scopes |= kScopeDiagnostics;
    } else if (scope == ScopeName(kScopeExperiment)) {
      scopes |= kScopeExperiment;
    } else if (scope == ScopeName(kScopeAdapters)) {
      scopes |= kScopeAdapters;
    } else {
      return LineError(source, line, absl::StrCat("unknown scope '", scope, "' (diagnostics, experiment, adapters or all)"));
    }
  }
  return scopes;
}

// `rpm=N,tpm=N,priority=N`, each at most once.
absl::Status ParseSettings(absl::string_view text, ApiKey& key, const std::string& source, int line) {
  std::set<std::string> seen;
  for (absl::string_view setting : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    setting = absl::StripAsciiWhitespace(setting);
    const size_t eq = setting.find('=');
    if (eq == absl::string_view::npos) return LineError(source, line, absl::StrCat("'", setting, "' is not NAME=VALUE"));
    const std::string name(absl::StripAsciiWhitespace(setting.substr(0, eq)));
    const absl::string_view value = absl::StripAsciiWhitespace(setting.substr(eq + 1));
    if (!seen.insert(name).second) return LineError(source, line, absl::StrCat("'", name, "' is given twice"));
    int64_t number = 0;
    if (!absl::SimpleAtoi(value, &number)) return LineError(source, line, absl::StrCat(name, ": '", value, "' is not an integer"));
    if (name == "rpm" || name == "tpm") {
      if (number < 0) return LineError(source, line, absl::StrCat(name, ": must be 0 (no limit) or more"));
      (name == "rpm" ? key.limits.requests_per_minute : key.limits.tokens_per_minute) = number;
    } else if (name == "priority") {
      if (number < -1000000 || number > 1000000) return LineError(source, line, "priority: must be in [-1000000, 1000000]");
      key.priority = static_cast<int>(number);
    } else {
      return LineError(source, line, absl::StrCat("unknown setting '", name, "' (rpm, tpm or priority)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* ScopeName(Scope scope) {
  switch (scope) {
    case kScopeDiagnostics: return "diagnostics";
    case kScopeExperiment: return "experiment";
    case kScopeAdapters: return "adapters";
  }
  return "?";
}

SecretDigest DigestOf(absl::string_view secret) {
  SecretDigest digest{};
  unsigned int length = 0;
  EVP_Digest(secret.data(), secret.size(), digest.data(), &length, EVP_sha256(), nullptr);
  return digest;
}

absl::StatusOr<std::vector<ApiKey>> ParseApiKeyFile(absl::string_view text, const std::string& source) {
  std::vector<ApiKey> keys;
  std::set<std::string> names;
  std::set<SecretDigest> digests;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 3));
    if (fields.size() < 2) return LineError(source, line_number, "expected NAME:SECRET[:SCOPES[:SETTINGS]]");
    ApiKey key;
    key.name = std::string(absl::StripAsciiWhitespace(fields[0]));
    if (!ValidName(key.name)) {
      return LineError(source, line_number, "the key's name must be 1-64 letters, digits, '.', '_' or '-'");
    }
    const absl::string_view secret = absl::StripAsciiWhitespace(fields[1]);
    if (secret.empty()) return LineError(source, line_number, absl::StrCat("key '", key.name, "' has an empty secret"));
    for (char c : secret) {
      if (absl::ascii_isspace(static_cast<unsigned char>(c)) || absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
        return LineError(source, line_number, absl::StrCat("key '", key.name, "': the secret has whitespace or control characters"));
      }
    }
    key.digest = DigestOf(secret);
    if (fields.size() > 2) {
      ARACH_ASSIGN_OR_RETURN(key.scopes, ParseScopes(fields[2], source, line_number));
    }
    if (fields.size() > 3) ARACH_RETURN_IF_ERROR(ParseSettings(fields[3], key, source, line_number));
    if (!names.insert(key.name).second) return LineError(source, line_number, absl::StrCat("key '", key.name, "' is given twice"));
    if (!digests.insert(key.digest).second) {
      return LineError(source, line_number, absl::StrCat("key '", key.name, "' has the secret of an earlier key"));
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

absl::StatusOr<std::unique_ptr<ApiKeys>> ApiKeys::Load(const std::string& file, const std::string& single_secret) {
  std::optional<ApiKey> single;
  if (!single_secret.empty()) {
    single.emplace();
    single->name = "default";
    single->digest = DigestOf(single_secret);
    single->scopes = kAllScopes;
  }
  std::unique_ptr<ApiKeys> keys(new ApiKeys(file, std::move(single)));
  ARACH_RETURN_IF_ERROR(keys->Reload());
  return keys;
}

absl::Status ApiKeys::Reload() {
  auto keys = std::make_shared<std::vector<ApiKey>>();
  if (!file_.empty()) {
    ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file_));
    ARACH_ASSIGN_OR_RETURN(*keys, ParseApiKeyFile(text, file_));
  }
  if (single_) {
    for (const ApiKey& key : *keys) {
      if (key.name == single_->name || key.digest == single_->digest) {
        return absl::InvalidArgumentError(
            absl::StrCat(file_, ": key '", key.name, "' has the name or the secret of --api_key (named 'default')"));
      }
    }
    keys->push_back(*single_);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  keys_ = std::move(keys);
  return absl::OkStatus();
}

bool ApiKeys::open() const { return size() == 0; }

size_t ApiKeys::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_->size();
}

std::vector<std::string> ApiKeys::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const ApiKey& key : *keys_) names.push_back(key.name);
  return names;
}

std::optional<ApiKey> ApiKeys::Find(absl::string_view presented) const {
  std::shared_ptr<const std::vector<ApiKey>> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys = keys_;
  }
  const SecretDigest digest = DigestOf(presented);
  const ApiKey* found = nullptr;
  for (const ApiKey& key : *keys) {  // no early exit: every key costs the same
    const bool equal = CRYPTO_memcmp(key.digest.data(), digest.data(), digest.size()) == 0;
    if (equal) found = &key;
  }
  if (found == nullptr) return std::nullopt;
  return *found;
}

}  // namespace arach::server
