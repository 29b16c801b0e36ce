#include "contract/gates.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "contract/check.hpp"
#include "contract/execute.hpp"

namespace plumb::contract {
namespace {

struct Seeds {
  uint64_t base;
  uint64_t at(uint64_t salt) const { return mix_seed(base, salt); }
};

// Records the first failure only; the text is built only then.
template <class Text>
void fail(GateResult& result, Text&& text) {
  if (result.passed) result.failure = text();
  result.passed = false;
}

std::string call_text(const Call& call) {
  return fmt::format("{} rows, inputs {}, seed 0x{:016x}", call.rows, call.inputs_kind, call.seed);
}

bool is_nan_bits(DType dtype, uint32_t bits) {
  if (dtype == DType::bf16) return (bits & 0x7fffu) > 0x7f80u;
  if (dtype == DType::f32) return (bits & 0x7fffffffu) > 0x7f800000u;
  return false;
}

// Gate 1 on one call: both launches clean, every element written (or kept where the op writes part of an
// output), NaN only where the reference has NaN. Gate 2's repeat: the two launches agree bit for bit.
void check_runs(const Form& form, const Call& call, const Launched& first, const Launched& second,
                GateResult& runs, GateResult& repeat) {
  for (const Launched* launched : {&first, &second})
    for (const std::string& problem : launched->problems)
      fail(runs, [&] { return fmt::format("{}: {}", call_text(call), problem); });
  if (!first.ok() || !second.ok()) return;
  std::optional<std::vector<std::vector<Span>>> expected;
  const auto expected_at = [&](size_t o, int64_t i) -> const Span& {
    if (!expected) expected = form.expected(call);
    return (*expected)[o][static_cast<size_t>(i)];
  };
  for (size_t o = 0; o < call.outputs.size(); ++o) {
    const HostData& a = first.outputs[o];
    const HostData& b = second.outputs[o];
    const uint32_t poison_a = poison_bits(a.dtype, 0), poison_b = poison_bits(a.dtype, 1);
    for (int64_t i = 0; i < a.elements(); ++i) {
      const uint32_t bits_a = a.bits(i), bits_b = b.bits(i);
      const bool unwritten = bits_a == poison_a && bits_b == poison_b;
      ++runs.checked;
      const Span* range = form.writes_every_output ? nullptr : &expected_at(o, i);
      if (range != nullptr && range->kept != unwritten) {
        fail(runs, [&] {
          return fmt::format("{}: output '{}' index {} {}", call_text(call), a.name, i,
                             range->kept ? "was written where the op must leave it" : "was not written");
        });
        continue;
      }
      if (unwritten && range == nullptr) {
        fail(runs, [&] {
          return fmt::format("{}: output '{}' index {} was not written (its poison survived)",
                             call_text(call), a.name, i);
        });
        continue;
      }
      if (unwritten) continue;
      ++repeat.checked;
      if (bits_a != bits_b)
        fail(repeat, [&] {
          return fmt::format("{}: output '{}' index {} differs between two runs: {} then {}", call_text(call),
                             a.name, i, format_bits(a.dtype, bits_a), format_bits(a.dtype, bits_b));
        });
      if (is_nan_bits(a.dtype, bits_a) && !expected_at(o, i).nan)
        fail(runs, [&] {
          return fmt::format(
              "{}: NaN where the reference has none: {}", call_text(call),
              describe_finding(call, Finding{static_cast<int>(o), i, expected_at(o, i), bits_a}));
        });
    }
  }
}

// The first element where two runs of bytes differ, described from the batch's side.
std::optional<std::string> compare_row(const Call& probe, const Launched& probe_run, int64_t probe_row,
                                       const Call& batch, const Launched& batch_run, int64_t batch_row,
                                       const Form& form) {
  const auto probe_bytes = form.row_bytes(probe, probe_row);
  const auto batch_bytes = form.row_bytes(batch, batch_row);
  for (size_t run = 0; run < probe_bytes.size(); ++run) {
    const HostData& want = probe_run.outputs[static_cast<size_t>(probe_bytes[run].output)];
    const HostData& got = batch_run.outputs[static_cast<size_t>(batch_bytes[run].output)];
    const size_t size = want.element_bytes();
    for (size_t k = 0; k < probe_bytes[run].count; k += size) {
      const int64_t want_index = static_cast<int64_t>((probe_bytes[run].offset + k) / size);
      const int64_t got_index = static_cast<int64_t>((batch_bytes[run].offset + k) / size);
      if (want.bits(want_index) == got.bits(got_index)) continue;
      return fmt::format(
          "row {} of a {}-row call ({}) differs as row {} of a {}-row batch: output '{}' index {}: alone {}, "
          "in "
          "the batch {}",
          probe_row, probe.rows, call_text(probe), batch_row, batch.rows, want.name, want_index,
          format_bits(want.dtype, want.bits(want_index)), format_bits(got.dtype, got.bits(got_index)));
    }
  }
  return std::nullopt;
}

// I1 and I2: rows of the probe call placed alone and inside batches of every registered size, among rows of
// a filler call with other contents; each must give the probe's bits.
void check_rows(const Form& form, ops::Backend& backend, const Call& probe, const Launched& probe_run,
                const Seeds& seeds, uint64_t shared, GateResult& invariant) {
  const Call filler = form.make_call({probe.rows, Inputs::gaussian, seeds.at(2), shared});
  for (int64_t batch_rows : form.batch_rows) {
    const std::set<int64_t> placements{0, batch_rows / 2, batch_rows - 1};
    for (int64_t place : placements) {
      const int64_t probe_row = (batch_rows * 7 + place) % probe.rows;
      std::vector<RowRef> refs;
      for (int64_t r = 0; r < batch_rows; ++r)
        refs.push_back(r == place ? RowRef{&probe, probe_row} : RowRef{&filler, r % filler.rows});
      const Call batch = form.assemble(refs);
      const Launched run = launch_call(backend, form, batch, 0);
      ++invariant.launches;
      for (const std::string& problem : run.problems)
        fail(invariant, [&] { return fmt::format("{}: {}", call_text(batch), problem); });
      if (!run.ok()) continue;
      if (auto difference = compare_row(probe, probe_run, probe_row, batch, run, place, form))
        fail(invariant, [&] { return *difference; });
      ++invariant.checked;
    }
  }
}

// Gates 3 and 4: one launch, every element inside its range.
void check_ranges(const Form& form, ops::Backend& backend, const Call& call, GateResult& result) {
  const Launched run = launch_call(backend, form, call, 0);
  ++result.launches;
  for (const std::string& problem : run.problems)
    fail(result, [&] { return fmt::format("{}: {}", call_text(call), problem); });
  if (!run.ok()) return;
  const auto expected = form.expected(call);
  for (size_t o = 0; o < run.outputs.size(); ++o) {
    const Comparison comparison = compare_output(run.outputs[o], static_cast<int>(o), expected[o],
                                                 poison_bits(run.outputs[o].dtype, 0));
    result.checked += comparison.checked;
    if (comparison.first) {
      Call described = call;
      described.outputs = run.outputs;
      fail(result, [&] {
        return fmt::format("{} of {} elements out of range; first: {}", comparison.failed, comparison.checked,
                           describe_finding(described, *comparison.first));
      });
    }
  }
}

}  // namespace

std::string_view gate_name(Gate gate) {
  switch (gate) {
    case Gate::runs:
      return "runs";
    case Gate::invariant:
      return "invariant";
    case Gate::shapes:
      return "shapes";
    case Gate::stress:
      return "stress";
    case Gate::records:
      return "records";
    case Gate::none:
      break;
  }
  return "none";
}

std::vector<GateResult> run_gates(const Form& form, ops::Backend& backend, const GateOptions& options) {
  const Seeds seeds{mix_seed(options.seed, name_seed(form.name()))};
  GateResult runs{Gate::runs}, invariant{Gate::invariant}, shapes{Gate::shapes}, stress{Gate::stress};
  const uint64_t shared = seeds.at(1);
  std::optional<Call> probe;
  std::optional<Launched> probe_run;
  for (int64_t rows : form.batch_rows) {
    Call call = form.make_call({rows, Inputs::gaussian, seeds.at(100 + static_cast<uint64_t>(rows)), shared});
    Launched first = launch_call(backend, form, call, 0);
    Launched second = launch_call(backend, form, call, 1);
    runs.launches += 2;
    check_runs(form, call, first, second, runs, invariant);
    if (!probe || call.rows > probe->rows) {
      probe = std::move(call);
      probe_run = std::move(first);
    }
  }
  std::vector<GateResult> results{runs};
  if (options.last >= Gate::invariant) {
    if (probe && probe_run->ok()) check_rows(form, backend, *probe, *probe_run, seeds, shared, invariant);
    results.push_back(invariant);
  }
  if (options.last >= Gate::shapes) {
    check_ranges(form, backend, form.make_call({form.shape_rows, Inputs::gaussian, seeds.at(3), seeds.at(4)}),
                 shapes);
    results.push_back(shapes);
  }
  if (options.last >= Gate::stress) {
    for (Inputs inputs : form.stresses)
      check_ranges(
          form, backend,
          form.make_call({form.shape_rows, inputs, seeds.at(5 + static_cast<uint64_t>(inputs)), seeds.at(6)}),
          stress);
    results.push_back(stress);
  }
  return results;
}

}  // namespace plumb::contract
