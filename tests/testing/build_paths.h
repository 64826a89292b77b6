// Where this build tree keeps what the tests run and read. The definitions are generated into the build
// folder by tests/CMakeLists.txt (file(GENERATE)), so that no test source carries an absolute path in its
// compile flags: every clone compiles the tests identically and ccache serves them from one cache.
#pragma once

namespace arach::testing {

// The repository root (deploy files, chat-template oracle cases).
const char* SourceDir();
// The conformance fixtures folder this build was configured with (../shared/fixtures by default);
// FixturesDir() in fixtures.h lets $ARACH_FIXTURES override it.
const char* ConfiguredFixturesDir();
// Where tests write the random-weight models they make (inside the build folder).
const char* TestModelsDir();
// arach-run (always built).
const char* RunBinary();

// The executables the end-to-end tests start (defined only where the server is built: arach_e2e_support).
const char* ServerBinary();
const char* CliBinary();

}  // namespace arach::testing
