// The exactness suite's entry: `test_exactness [--backend cpu|cuda] [gtest flags]`.
#include <cstdio>
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
  auto backend = plumb::engine::testing::make_backend();
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.error().message.c_str());
    return 2;
  }
  std::fprintf(stderr, "exactness suite on backend '%s'\n", std::string((*backend)->name()).c_str());
  backend->reset();
  return RUN_ALL_TESTS();
}
