#include "cmdline/subcommands.h"

#include <algorithm>
#include <cstdio>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace arach::cmdline {
namespace {

bool IsHelp(absl::string_view arg) {
  return arg == "--help" || arg == "-h" || arg == "--helpfull" || arg == "--helpshort" || arg == "-help";
}

// The flag name of "--name", "--name=value" or "--noname" (a negated bool), or "" for other arguments.
std::string FlagName(absl::string_view arg) {
  if (!absl::StartsWith(arg, "-") || arg == "-" || arg == "--") return "";
  arg.remove_prefix(absl::StartsWith(arg, "--") ? 2 : 1);
  const size_t eq = arg.find('=');
  std::string name(arg.substr(0, eq));
  if (absl::FindCommandLineFlag(name) == nullptr && absl::StartsWith(name, "no")) {
    const absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
    if (negated != nullptr && negated->IsOfType<bool>()) return name.substr(2);
  }
  return name;
}

// Whether the argument after `arg` is its value ("--flag value" for a non-bool flag).
bool TakesNextArgument(absl::string_view arg) {
  if (!absl::StartsWith(arg, "-") || absl::StrContains(arg, '=')) return false;
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(FlagName(arg));
  return flag != nullptr && !flag->IsOfType<bool>();  // a negated "--noX" is always a bool
}

// Abseil's own flags (--flagfile, --fromenv, --undefok, ...) apply to every command.
bool IsAbseilFlag(const absl::CommandLineFlag& flag) { return absl::StrContains(flag.Filename(), "absl/"); }

}  // namespace

absl::StatusOr<Invocation> ReadInvocation(const std::vector<Subcommand>& commands, int argc, char** argv) {
  Invocation out;
  std::string name;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (IsHelp(arg)) {
      out.help = true;
    } else if (arg == "--") {
      break;
    } else if (absl::StartsWith(arg, "-")) {
      if (TakesNextArgument(arg)) ++i;
    } else if (name.empty()) {
      name = std::string(arg);
    }
  }
  if (name.empty()) return out;
  for (const Subcommand& command : commands) {
    if (command.name == name) out.command = &command;
  }
  if (out.command == nullptr) {
    std::vector<std::string> names;
    for (const Subcommand& command : commands) names.push_back(command.name);
    return absl::InvalidArgumentError(absl::StrCat("unknown command \"", name, "\" (", absl::StrJoin(names, ", "), ")"));
  }
  return out;
}

std::string ProgramHelp(absl::string_view program, const std::vector<Subcommand>& commands) {
  size_t width = 0;
  for (const Subcommand& command : commands) width = std::max(width, command.name.size());
  std::string text = absl::StrCat("usage: ", program, " COMMAND [flags]\n\ncommands:\n");
  for (const Subcommand& command : commands) {
    absl::StrAppend(&text, "  ", command.name, std::string(width + 2 - command.name.size(), ' '), command.summary, "\n");
  }
  absl::StrAppend(&text, "\n", program, " COMMAND --help lists the flags of COMMAND.\n");
  return text;
}

namespace {

// "PROGRAM COMMAND", or "COMMAND" for a program that is its only command.
std::string CommandLine(absl::string_view program, const Subcommand& command) {
  return program.empty() ? command.name : absl::StrCat(program, " ", command.name);
}

}  // namespace

std::string CommandHelp(absl::string_view program, const Subcommand& command) {
  std::string text = absl::StrCat("usage: ", CommandLine(program, command), " [flags]\n", command.summary, "\n\nflags:\n");
  for (const std::string& name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    std::string value = flag->DefaultValue();
    if (flag->IsOfType<std::string>()) value = absl::StrCat("\"", value, "\"");
    absl::StrAppend(&text, "  --", name, " (default: ", value, ")\n      ", flag->Help(), "\n");
  }
  return text;
}

absl::Status CheckFlagsBelong(absl::string_view program, const Subcommand& command, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::StartsWith(arg, "-") || IsHelp(arg)) continue;
    const std::string name = FlagName(arg);
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr || IsAbseilFlag(*flag)) continue;  // absl reports unknown flags itself
    if (std::find(command.flags.begin(), command.flags.end(), name) == command.flags.end()) {
      const std::string line = CommandLine(program, command);
      return absl::InvalidArgumentError(absl::StrCat("--", name, " does not apply to \"", line, "\" (see ", line, " --help)"));
    }
    if (TakesNextArgument(arg)) ++i;
  }
  return absl::OkStatus();
}

SubcommandStart StartSubcommand(absl::string_view program, const std::vector<Subcommand>& commands, int argc, char** argv) {
  absl::StatusOr<Invocation> invocation = ReadInvocation(commands, argc, argv);
  if (!invocation.ok()) {
    std::fprintf(stderr, "%s: %s\n", std::string(program).c_str(), std::string(invocation.status().message()).c_str());
    return {nullptr, 2};
  }
  if (invocation->command == nullptr || invocation->help) {
    const std::string help = invocation->command == nullptr ? ProgramHelp(program, commands) : CommandHelp(program, *invocation->command);
    std::fputs(help.c_str(), invocation->help ? stdout : stderr);
    return {nullptr, invocation->help ? 0 : 2};
  }
  if (absl::Status s = CheckFlagsBelong(program, *invocation->command, argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", std::string(program).c_str(), std::string(s.message()).c_str());
    return {nullptr, 2};
  }
  absl::ParseCommandLine(argc, argv);
  return {invocation->command, 0};
}

SubcommandStart StartSingleCommand(const Subcommand& command, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (IsHelp(argv[i])) {
      std::fputs(CommandHelp("", command).c_str(), stdout);
      return {nullptr, 0};
    }
  }
  if (absl::Status s = CheckFlagsBelong("", command, argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", command.name.c_str(), std::string(s.message()).c_str());
    return {nullptr, 2};
  }
  absl::ParseCommandLine(argc, argv);
  return {&command, 0};
}

}  // namespace arach::cmdline
