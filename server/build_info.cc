#include "server/build_info.h"

namespace arach::server {

const char* ArachVersion() { return ARACH_VERSION; }
const char* ArachGitSha() { return ARACH_GIT_SHA; }

}  // namespace arach::server
