// arach-cli: talks to arach-server. `arach-cli --help` lists the commands; `arach-cli COMMAND --help`
// lists that command's flags with their defaults. Flag names may be written with hyphens or underscores.
//   arach-cli generate --server HOST:PORT --prompt TEXT [--max_tokens N] [--variant arach] [--temperature T] ...
//   arach-cli score    --server HOST:PORT (--text TEXT | --file F) [--variant skip] [--json]
//   arach-cli embed    --server HOST:PORT (--text TEXT | --file F) [--dimensions N] [--variant arach] [--json]
//   arach-cli diagnostics --server HOST:PORT --text FILE [--variants base,arach] [--chart diagnostics.svg] [--json]
//   arach-cli info | health --server HOST:PORT
//   arach-cli load-lora --server HOST:PORT --lora NAME --lora_path PATH [--load_inplace] | unload-lora --lora NAME
//   arach-cli bench    --server HOST:PORT (--rate R | --concurrency C) --num_requests N [--variant_mix base=1,arach=1]
//   arach-cli eval     --server HOST:PORT --a base --b arach [--lambada F] [--text F --window W] [--json_out F]
//   arach-cli ab       --server HOST:PORT --prompts F [--split base=50,arach=50] [--json_out F]
//   arach-cli ab       --prometheus http://HOST:PORT   (the fleet's A/B from the recording rules)
//   arach-cli batch    --http HOST:PORT --input requests.jsonl [--output results.jsonl] [--concurrency C]
#include <cstdio>
#include <string>
#include <vector>

#include "client/cli/commands.h"
#include "client/cli/flags.h"
#include "cmdline/flag_names.h"
#include "cmdline/subcommands.h"

namespace arach::client {
namespace {

// Runs `run` with the options `command`'s flags gave, or says why they are not valid (exit 2).
template <typename Options>
int RunWithOptions(const char* command, const absl::StatusOr<Options>& options, int (*run)(const Options&)) {
  if (!options.ok()) {
    std::fprintf(stderr, "arach-cli %s: %s\n", command, std::string(options.status().message()).c_str());
    return 2;
  }
  return run(*options);
}

int Dispatch(const std::string& command) {
  if (command == "generate") return RunWithOptions("generate", GenerateOptionsFromFlags(), RunGenerate);
  if (command == "score") return RunScore(ScoreOptionsFromFlags());
  if (command == "embed") return RunEmbed(EmbedOptionsFromFlags());
  if (command == "diagnostics") return RunDiagnostics(DiagnosticsOptionsFromFlags());
  if (command == "info") return RunInfo(ConnectOptionsFromFlags());
  if (command == "health") return RunHealth(ConnectOptionsFromFlags());
  if (command == "load-lora") return RunLoadLora(LoraAdminOptionsFromFlags());
  if (command == "unload-lora") return RunUnloadLora(LoraAdminOptionsFromFlags());
  if (command == "bench") return RunBench(BenchOptionsFromFlags());
  if (command == "eval") return RunEval(EvalOptionsFromFlags());
  if (command == "ab") return RunAb(AbOptionsFromFlags());
  if (command == "batch") return RunWithOptions("batch", BatchOptionsFromFlags(), RunBatch);
  return 2;  // not reached: ReadInvocation knows the commands
}

}  // namespace
}  // namespace arach::client

int main(int argc, char** argv) {
  std::vector<std::string> storage;
  std::vector<char*> args = arach::cmdline::NormalizeFlagNames(argc, argv, storage);
  const arach::cmdline::SubcommandStart start =
      arach::cmdline::StartSubcommand("arach-cli", arach::client::CliCommands(), argc, args.data());
  if (start.command == nullptr) return start.exit_status;
  return arach::client::Dispatch(start.command->name);
}
