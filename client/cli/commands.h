// The arach-cli commands. Each takes its options (filled from the flags once, in flags.cc) and returns
// the process exit status: 0 on success, 1 when a call failed, 2 for bad options.
#pragma once

#include "client/cli/options.h"

namespace arach::client {

int RunGenerate(const GenerateOptions& options);
int RunScore(const ScoreOptions& options);
int RunEmbed(const EmbedOptions& options);
int RunDiagnostics(const DiagnosticsOptions& options);
int RunInfo(const ConnectOptions& options);
int RunLoadLora(const LoraAdminOptions& options);
int RunUnloadLora(const LoraAdminOptions& options);
int RunHealth(const ConnectOptions& options);
int RunBench(const BenchOptions& options);
int RunEval(const EvalOptions& options);
int RunAb(const AbOptions& options);
int RunBatch(const BatchOptions& options);

}  // namespace arach::client
