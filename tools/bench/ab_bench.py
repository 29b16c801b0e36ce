#!/usr/bin/env python3
"""A/B of `plumb bench` variants, for the GPU machine: each variant is a name and environment switches
(NAME:KEY=VALUE[,KEY=VALUE...], none for the build as it is), where the switch plumb=PATH runs another build
(a tree of tools/device/build-trees.sh) instead of --plumb; the rounds alternate the variants (A B A B ...), so
the machine's drift falls on all of them alike. For each line of the bench (decode at S streams, the
prompt at L tokens) it prints every run's tokens/s, their median, the median of the runs' fractions of their own
bound, and the median's ratio to the first variant's.

Before any speed counts it checks that every run exited 0 with no failed check of its own, and that every run
of every variant drew the first variant's tokens (decode: stream 0's token_sha; prompt: the first token): a
switch that moves a bit is a fault in the switch, not a speedup. With --bits-may-differ (variants that change
the sums' order by design, such as the K-split plan's PLUMB_CUDA_TARGET_BLOCKS) each variant's runs must draw
its own round 1's tokens instead. Exits 1 when a check fails, naming the run.

    ab_bench.py --plumb build/src/cli/plumb --model /tmp/m4 --out DIR --rounds 3 \\
        --variant steps:PLUMB_CUDA_FUSED_GEGLU=0 --variant fused [-- --streams 1,8,32 --prompts 2048]
    ab_bench.py --plumb build/src/cli/plumb --model /tmp/m16 --out DIR \
        --variant new --variant base:plumb=/tmp/plumb-trees/base/build/src/cli/plumb
    ab_bench.py --from DIR --variant steps --variant fused     (the JSONs of an earlier run, nothing run)

Each run writes DIR/VARIANT-rROUND.json (plumb bench --json) and .log; --json FILE writes the table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def parse_variant(text):
    name, _, switches = text.partition(":")
    if not name or "/" in name:
        raise argparse.ArgumentTypeError(f"variant '{text}' has no usable name; expected NAME[:KEY=VALUE,...]")
    env = {}
    for switch in filter(None, switches.split(",")):
        key, sep, value = switch.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"variant '{text}' has a switch '{switch}' without KEY=VALUE")
        env[key] = value
    return name, env


def run_path(folder, name, round_index, suffix):
    return os.path.join(folder, f"{name}-r{round_index}.{suffix}")


# The switch that names a variant's build rather than an environment variable.
BUILD_SWITCH = "plumb"


def run_benches(args, variants):
    os.makedirs(args.out, exist_ok=True)
    for r in range(1, args.rounds + 1):
        for name, switches in variants:
            env = {key: value for key, value in switches.items() if key != BUILD_SWITCH}
            command = [switches.get(BUILD_SWITCH, args.plumb), "bench", args.model, "--backend", args.backend,
                       *args.bench_args, "--json", run_path(args.out, name, r, "json")]
            with open(run_path(args.out, name, r, "log"), "w") as log:
                try:
                    code = subprocess.run(command, env={**os.environ, **env}, stdout=log,
                                          stderr=subprocess.STDOUT, timeout=args.timeout).returncode
                except subprocess.TimeoutExpired:
                    code = f"timeout after {args.timeout:g} s"
            print(f"ran {name} round {r}: exit {code}", flush=True)
            with open(run_path(args.out, name, r, "rc"), "w") as file:
                file.write(f"{code}\n")


def fraction(speed, bound):
    return speed / bound if bound else None  # a bound the run could not measure (no cuBLAS: no GEMM rate)


# One bench run's lines: key -> (tokens/s, fraction of its bound or None, the tokens that must agree).
def run_lines(report):
    lines = {}
    for d in report.get("decode", []):
        speed = d["tokens_per_second"]
        lines[("decode", d["streams"])] = (speed, fraction(speed, d.get("bound_tokens_per_second")),
                                           d["stream0_token_sha"])
    for p in report.get("prompt", []):
        speed = p["tokens_per_second"]
        lines[("prompt", p["tokens"])] = (speed, fraction(speed, p.get("bound_tokens_per_second")),
                                          p["first_token"])
    return lines


def label(key):
    kind, count = key
    return f"decode {count} stream{'s' if count != 1 else ''}" if kind == "decode" else f"prompt {count} tokens"


def load_runs(folder, variants):
    """Every variant's runs in round order, and the problems found loading them."""
    runs, problems = {}, []
    for name, _ in variants:
        runs[name] = []
        r = 1
        while os.path.exists(run_path(folder, name, r, "json")) or os.path.exists(run_path(folder, name, r, "rc")):
            where = f"{name} round {r}"
            rc_file = run_path(folder, name, r, "rc")
            if os.path.exists(rc_file) and open(rc_file).read().strip() != "0":
                problems.append(f"ab_bench: run '{where}' exited {open(rc_file).read().strip()}; expected 0")
            try:
                with open(run_path(folder, name, r, "json")) as file:
                    report = json.load(file)
            except (OSError, ValueError) as error:
                problems.append(f"ab_bench: run '{where}' has no readable JSON; expected plumb bench --json, "
                                f"got {error}")
                r += 1
                continue
            if report.get("failed_checks"):
                problems.append(f"ab_bench: run '{where}' failed plumb bench's checks; expected none, got "
                                f"{report['failed_checks']}")
            runs[name].append(run_lines(report))
            r += 1
        if not runs[name]:
            problems.append(f"ab_bench: variant '{name}' has no runs in '{folder}'; expected {name}-r1.json")
    return runs, problems


def token_problems(runs, variants, own_tokens=False):
    """Every run's tokens against the first variant's round 1, or with own_tokens its own variant's."""
    problems = []
    for name, _ in variants:
        first = name if own_tokens else variants[0][0]
        if not runs[first]:
            continue
        reference = runs[first][0]
        for r, lines in enumerate(runs[name], start=1):
            for key, (_, _, tokens) in lines.items():
                want = reference.get(key, (None, None, tokens))[2]
                if tokens != want:
                    problems.append(f"ab_bench: run '{name} round {r}' line '{label(key)}' drew other tokens; "
                                    f"expected {want} ('{first}' round 1), got {tokens}")
    return problems


def table(runs, variants):
    rows = []
    keys = sorted({key for name, _ in variants for lines in runs[name] for key in lines})
    for key in keys:
        base = None
        for name, _ in variants:
            speeds = [lines[key][0] for lines in runs[name] if key in lines]
            if not speeds:
                continue
            median = statistics.median(speeds)
            fractions = [lines[key][1] for lines in runs[name] if key in lines and lines[key][1] is not None]
            base = median if base is None else base
            rows.append({"line": label(key), "variant": name, "runs": speeds, "median": median,
                         "fraction_of_bound": statistics.median(fractions) if fractions else None,
                         "ratio": median / base})
    return rows


def print_table(rows):
    print(f"{'line':<18} {'variant':<12} {'runs (tokens/s)':<30} {'median':>10} {'of bound':>9} {'ratio':>7}")
    for row in rows:
        speeds = " ".join(f"{s:.1f}" for s in row["runs"])
        share = row["fraction_of_bound"]
        share_text = f"{100 * share:>8.1f}%" if share is not None else f"{'-':>9}"
        print(f"{row['line']:<18} {row['variant']:<12} {speeds:<30} {row['median']:>10.1f} {share_text} "
              f"{row['ratio']:>7.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", action="append", type=parse_variant, required=True)
    parser.add_argument("--plumb", help="the plumb binary to run (for variants without plumb=PATH)")
    parser.add_argument("--model", help="the checkpoint to bench")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="folder for each run's JSON and log")
    parser.add_argument("--from", dest="source", help="summarize the runs already in this folder")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    parser.add_argument("--json", help="write the table and checks here")
    parser.add_argument("--bits-may-differ", action="store_true",
                        help="variants whose sums' order differs by design (a K-split plan): each variant's runs "
                             "must draw its own round 1's tokens instead of the first variant's")
    parser.add_argument("bench_args", nargs="*", help="after --: options for plumb bench")
    args = parser.parse_args()
    variants = args.variant
    if len({name for name, _ in variants}) != len(variants):
        parser.error("each --variant needs a name of its own")
    if args.source is None:
        builds = args.plumb or all(BUILD_SWITCH in switches for _, switches in variants)
        if not (builds and args.model and args.out) or args.rounds < 1:
            parser.error("running needs --plumb (or plumb=PATH in every variant), --model, --out and --rounds "
                         "of at least 1 (or --from DIR)")
        run_benches(args, variants)
    folder = args.source if args.source is not None else args.out
    runs, problems = load_runs(folder, variants)
    problems += token_problems(runs, variants, args.bits_may_differ)
    rows = table(runs, variants)
    print_table(rows)
    count = sum(len(runs[name]) for name, _ in variants)
    for problem in problems:
        print(problem)
    if problems:
        print(f"CHECKS FAILED: {len(problems)} problems in {count} runs")
    else:
        whose = "its own variant's" if args.bits_may_differ else f"'{variants[0][0]}'"
        print(f"CHECKS passed: {count} runs, each with plumb bench's checks passed and the tokens of {whose} "
              f"round 1")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"rows": rows, "problems": problems}, file, indent=1)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
