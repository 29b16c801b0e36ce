// `plumb contract`: the kernel contract (DESIGN.md §3) on the CPU or CUDA backend, ending in its SUMMARY
// line.
#include <memory>

#include "cli/command.hpp"
#include "contract/runner.hpp"

namespace plumb::cli {
namespace {

const RegisterCommand kContract{
    {"contract", "Run the kernel contract: every launched form through gates 1-5, every control red",
     [](CLI::App& command) -> CommandRun {
       auto options = std::make_shared<contract::RunnerOptions>();
       command.add_option("--backend", options->backend, "backend to check: cpu or cuda")
           ->check(CLI::IsMember({"cpu", "cuda"}));
       command.add_option("--only", options->only, "a form, control or op name, or a prefix ending in '/'");
       command.add_flag("--list", options->list, "list the registered forms and controls; run nothing");
       command.add_flag("--records-only", options->records_only,
                        "check only the CUDA kernel records against the compiler's report (no GPU needed)");
       command.add_flag("--update-records", options->update_records,
                        "rewrite the records file from the compiler's report (after a deliberate change)");
       command.add_option("--records", options->records_file, "the records file (default: the repository's)");
       command.add_option("--report", options->report,
                          "the compiler's report: a file, or a folder searched for *.resources files");
       command.add_option("--seed", options->seed, "seed of every generated input (default 1)");
       command.add_option("--threads", options->threads, "CPU backend threads (default: all)");
       return [options] { return contract::run_contract(*options, stdout); };
     }}};

}  // namespace
}  // namespace plumb::cli
