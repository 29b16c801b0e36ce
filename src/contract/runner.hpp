#pragma once
// `plumb contract`: runs gates 1-4 for every selected form and control on one backend, gate 5 on the CUDA
// records, prints one line per form, control and record problem, and the SUMMARY line.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "contract/registry.hpp"

namespace plumb::contract {

struct RunnerOptions {
  std::string backend = "cpu";
  std::string only;             // a form, a control, an op, or a prefix of their names; empty: all
  bool list = false;            // print what is registered, run nothing
  bool records_only = false;    // gate 5 alone (needs no GPU)
  bool update_records = false;  // rewrite the records file from the compiler's report
  std::string records_file;     // default: the repository's src/contract/records/cuda_resources.txt
  std::string report;           // a report file, or a directory searched for *.resources files
  uint64_t seed = 1;
  int threads = 0;  // CPU backend threads; 0: all
};

struct Tally {
  int kernels = 0;
  int kernels_passed = 0;
  int controls = 0;
  int controls_red = 0;
  int record_problems = 0;
  int exit_code() const;
};

// "SUMMARY <n> kernels: <n> pass gates 1-4, <n> fail; <n> controls: <n> red as planted, <n> missed; <n>
// record problems"
std::string summary_line(const Tally& tally);
// Whether `only` selects a name: equal, or `only` is a prefix ending at a '/' or the whole op.
bool selects(const std::string& only, const std::string& name, const std::string& op);

// Runs the contract; returns the exit code (0 all green, 1 any fail, miss or record problem, 2 bad input).
int run_contract(const RunnerOptions& options, std::FILE* out);

// Gate 5 alone: compares (or with update, rewrites) the records; adds its problems to the tally.
int check_records(const RunnerOptions& options, std::FILE* out, Tally& tally);

}  // namespace plumb::contract
