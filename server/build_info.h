// What this server binary is: its version (CMake project version) and the git commit it was configured
// from ("unknown" outside a git checkout), for arach_build_info and the start-up log.
#pragma once

namespace arach::server {

const char* ArachVersion();
const char* ArachGitSha();

}  // namespace arach::server
