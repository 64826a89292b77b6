// Subcommand help and flag ownership (cmdline/subcommands.h) on flags defined here.
#include "cmdline/subcommands.h"

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, test_server, "127.0.0.1:1", "where to connect");
ABSL_FLAG(int, test_count, 3, "how many");
ABSL_FLAG(bool, test_verbose, false, "say more");

namespace arach::cmdline {
namespace {

using ::testing::HasSubstr;

const std::vector<Subcommand> kCommands = {{"run", "runs things", {"test_server", "test_count", "test_verbose"}},
                                           {"info", "describes things", {"test_server"}}};

struct Argv {
  explicit Argv(std::vector<std::string> args) : storage(std::move(args)) {
    for (std::string& s : storage) pointers.push_back(s.data());
  }
  int argc() const { return static_cast<int>(pointers.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> storage;
  std::vector<char*> pointers;
};

TEST(Subcommands, TheCommandIsTheFirstArgumentThatIsNotAFlagValue) {
  Argv args({"prog", "--test_server", "host:1", "--test_verbose", "info"});
  auto invocation = ReadInvocation(kCommands, args.argc(), args.argv());
  ASSERT_TRUE(invocation.ok()) << invocation.status();
  ASSERT_NE(invocation->command, nullptr);
  EXPECT_EQ(invocation->command->name, "info");
  EXPECT_FALSE(invocation->help);

  Argv help({"prog", "run", "--help"});
  invocation = ReadInvocation(kCommands, help.argc(), help.argv());
  ASSERT_TRUE(invocation.ok());
  EXPECT_TRUE(invocation->help);
  EXPECT_EQ(invocation->command->name, "run");

  Argv none({"prog", "-h"});
  invocation = ReadInvocation(kCommands, none.argc(), none.argv());
  ASSERT_TRUE(invocation.ok());
  EXPECT_EQ(invocation->command, nullptr);

  Argv unknown({"prog", "fly"});
  EXPECT_THAT(std::string(ReadInvocation(kCommands, unknown.argc(), unknown.argv()).status().message()),
              HasSubstr("unknown command \"fly\" (run, info)"));
}

TEST(Subcommands, HelpListsCommandsAndEachCommandsFlagsWithDefaults) {
  const std::string program = ProgramHelp("prog", kCommands);
  EXPECT_THAT(program, HasSubstr("  run   runs things\n"));
  EXPECT_THAT(program, HasSubstr("  info  describes things\n"));
  const std::string run = CommandHelp("prog", kCommands[0]);
  EXPECT_THAT(run, HasSubstr("--test_server (default: \"127.0.0.1:1\")\n      where to connect"));
  EXPECT_THAT(run, HasSubstr("--test_count (default: 3)"));
  EXPECT_THAT(run, HasSubstr("--test_verbose (default: false)"));
}

TEST(Subcommands, AFlagOfAnotherCommandIsAnError) {
  Argv ok({"prog", "--test_server=x", "info"});
  EXPECT_TRUE(CheckFlagsBelong("prog", kCommands[1], ok.argc(), ok.argv()).ok());
  Argv bad({"prog", "info", "--test_count", "4"});
  EXPECT_THAT(std::string(CheckFlagsBelong("prog", kCommands[1], bad.argc(), bad.argv()).message()),
              HasSubstr("--test_count does not apply to \"prog info\""));
  Argv negated({"prog", "info", "--notest_verbose"});
  EXPECT_THAT(std::string(CheckFlagsBelong("prog", kCommands[1], negated.argc(), negated.argv()).message()),
              HasSubstr("--test_verbose does not apply"));
  Argv run({"prog", "run", "--notest_verbose", "--test_count", "4"});
  EXPECT_TRUE(CheckFlagsBelong("prog", kCommands[0], run.argc(), run.argv()).ok());
}

}  // namespace
}  // namespace arach::cmdline
