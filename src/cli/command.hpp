#pragma once
// Subcommands register themselves here; each returns its exit code (0 ok, 1 failure, 2 bad input).
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace plumb::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

using CommandRun = std::function<int()>;
// Declares the subcommand's options on `command` and returns what runs it after parsing.
using CommandSetup = std::function<CommandRun(CLI::App& command)>;

struct CommandSpec {
  std::string name;
  std::string summary;
  CommandSetup setup;
};

std::vector<CommandSpec>& command_registry();

struct RegisterCommand {
  explicit RegisterCommand(CommandSpec spec) { command_registry().push_back(std::move(spec)); }
};

// Prints "plumb <command>: <message>" to stderr and returns kExitBadInput.
int report_bad_input(const std::string& command, const std::string& message);

}  // namespace plumb::cli
