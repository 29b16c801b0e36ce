// The exactness suite's entry: `test_exactness [--backend cpu|cuda] [gtest flags]`.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine_fixture.hpp"

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      plumb::engine::testing::backend_name() = argv[++i];
    } else if (std::strncmp(argv[i], "--backend=", 10) == 0) {
      plumb::engine::testing::backend_name() = argv[i] + 10;
    } else {
      rest.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(rest.size());
  ::testing::InitGoogleTest(&count, rest.data());
  return RUN_ALL_TESTS();
}
