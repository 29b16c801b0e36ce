#pragma once
// Runs the plumb executable of this build (PLUMB_BINARY_DIR, set by the test's CMake target) with `arguments`
// and returns (exit code, stdout); stderr is dropped.
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace plumb::testing {

inline std::pair<int, std::string> run_plumb(const std::string& arguments) {
  const std::string command = std::string(PLUMB_BINARY_DIR) + "/src/cli/plumb " + arguments + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string out;
  char buffer[4096];
  while (size_t read = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, read);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace plumb::testing
