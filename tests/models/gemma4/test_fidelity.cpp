// The Gemma 4 fidelity gate (fidelity.hpp) on the CPU backend.
#include "cpu/cpu_backend.hpp"
#include "fidelity.hpp"

namespace plumb::gemma4 {
namespace {

TEST(Gemma4Fidelity, EveryFixtureWithinTwiceHfBf16Error) {
  auto backend = cpu::make_cpu_backend(2);
  if (!testing::check_every_fixture(*backend))
    GTEST_SKIP()
        << "no Gemma 4 reference fixtures at " << testing::fixture_dir().string()
        << " (run tools/reference/gemma4_fixtures.py on a machine with torch and transformers, and copy "
           "its output there)";
}

}  // namespace
}  // namespace plumb::gemma4
