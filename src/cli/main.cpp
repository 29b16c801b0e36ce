#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/command.hpp"
#include "plumb/version.hpp"

namespace plumb::cli {

std::vector<CommandSpec>& command_registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

int report_bad_input(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "plumb %s: %s\n", command.c_str(), message.c_str());
  return kExitBadInput;
}

namespace {
int run_main(int argc, char** argv) {
  CLI::App app{"Plumb: an exact, fast inference engine for Gemma 4 and MOSS-Image"};
  app.set_version_flag("--version", std::string("plumb ") + kVersion);
  app.require_subcommand(1);
  std::vector<CommandSpec> specs = command_registry();
  std::sort(specs.begin(), specs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::map<CLI::App*, CommandRun> runs;
  for (const CommandSpec& spec : specs) {
    CLI::App* command = app.add_subcommand(spec.name, spec.summary);
    runs[command] = spec.setup(*command);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kExitBadInput;
  }
  for (auto& [command, run] : runs)
    if (command->parsed()) return run();
  return kExitBadInput;
}
}  // namespace

}  // namespace plumb::cli

int main(int argc, char** argv) {
  return plumb::cli::run_main(argc, argv);
}
