// Lets executables accept flags spelled with hyphens (--kv-cache-bytes) as well as Abseil's underscores
// (--kv_cache_bytes): rewrites the names in argv before absl::ParseCommandLine.
#pragma once

#include <string>
#include <vector>

namespace arach::cmdline {

// Returns argv with every "--some-flag[=value]" rewritten to "--some_flag[=value]". The strings live in
// `storage`; the returned pointers stay valid while it does.
std::vector<char*> NormalizeFlagNames(int argc, char** argv, std::vector<std::string>& storage);

}  // namespace arach::cmdline
