#!/usr/bin/env python3
"""tools/bench/ab_bench.py with a made-up plumb that writes plumb bench's JSON from its environment: the rounds
alternate the variants, the medians, fractions and ratios come out of the runs, a variant whose switch moves a
token fails the check by name (with --bits-may-differ, a variant whose own rounds differ), as does a run past
its time, a bound the run could not measure prints as -, --from summarizes a folder without running anything,
and a variant with plumb=PATH runs that build.

    test_ab_bench.py PATH/TO/ab_bench.py
"""
import json
import os
import subprocess
import sys
import tempfile

FAKE_PLUMB = r'''#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_ORDER"], "a") as order:
    order.write(os.environ.get("FAKE_SPEED", "100") + "\n")
if os.environ.get("FAKE_HANG"):
    import time
    time.sleep(30)
speed = float(os.environ.get("FAKE_SPEED", "100"))
count = int(open(os.environ["FAKE_ORDER"]).read().count("\n"))
speed += count % 2 * 0.5  # a little drift between runs
sha = os.environ.get("FAKE_SHA", "aaa") + (str(count) if os.environ.get("FAKE_SHA_DRIFT") else "")
report = {"backend": "fake", "bounds": {}, "failed_checks": [], "model": {}, "peak_device_bytes": 0,
          "decode": [{"streams": 1, "tokens_per_second": speed, "bound_tokens_per_second": 4 * speed,
                      "stream0_token_sha": sha, "step_seconds": []}],
          "prompt": [{"tokens": 2048, "tokens_per_second": 10 * speed,
                      "bound_tokens_per_second": None if os.environ.get("FAKE_NO_GEMM") else 50 * speed,
                      "first_token": 7, "seconds": []}]}
with open(args[args.index("--json") + 1], "w") as file:
    json.dump(report, file)
'''


def run(tool, *args, env=None):
    return subprocess.run([sys.executable, tool, *args], capture_output=True, text=True, env=env)


def check(condition, what, result):
    if not condition:
        print(f"FAIL {what}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
        sys.exit(1)


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        plumb = os.path.join(folder, "plumb")
        with open(plumb, "w") as file:
            file.write(FAKE_PLUMB)
        os.chmod(plumb, 0o755)
        order = os.path.join(folder, "order.txt")
        env = {**os.environ, "FAKE_ORDER": order}
        out = os.path.join(folder, "runs")
        table = os.path.join(folder, "table.json")
        result = run(tool, "--plumb", plumb, "--model", "m", "--out", out, "--rounds", "3", "--variant",
                     "slow:FAKE_SPEED=100", "--variant", "fast:FAKE_SPEED=110", "--json", table, "--",
                     "--streams", "1", env=env)
        check(result.returncode == 0, "two variants with the same tokens pass", result)
        check(open(order).read().split() == ["100", "110"] * 3, "the rounds alternate the variants", result)
        rows = {(row["line"], row["variant"]): row for row in json.load(open(table))["rows"]}
        slow, fast = rows[("decode 1 stream", "slow")], rows[("decode 1 stream", "fast")]
        check(slow["runs"] == [100.5, 100.5, 100.5] and fast["runs"] == [110.0, 110.0, 110.0],
              "each run's speed, in round order", result)
        check(abs(fast["ratio"] - 110.0 / 100.5) < 1e-9 and slow["ratio"] == 1.0, "ratios to the first", result)
        check(abs(fast["fraction_of_bound"] - 0.25) < 1e-9, "the fraction of each run's own bound", result)
        check(("prompt 2048 tokens", "fast") in rows, "the prompt line", result)
        check("CHECKS passed: 6 runs" in result.stdout, "the checks line", result)

        moved = os.path.join(folder, "moved")
        result = run(tool, "--plumb", plumb, "--model", "m", "--out", moved, "--rounds", "2", "--variant",
                     "base", "--variant", "broken:FAKE_SHA=bbb", env=env)
        check(result.returncode == 1, "a variant that moves a token fails", result)
        check("run 'broken round 1' line 'decode 1 stream' drew other tokens; expected aaa ('base' round 1), "
              "got bbb" in result.stdout, "the failure names the run, the line and both tokens", result)

        result = run(tool, "--plumb", plumb, "--model", "m", "--out", os.path.join(folder, "own"), "--rounds",
                     "2", "--variant", "base", "--variant", "plan:FAKE_SHA=bbb", "--bits-may-differ", env=env)
        check(result.returncode == 0 and "the tokens of its own variant's round 1" in result.stdout,
              "--bits-may-differ holds each variant to its own tokens", result)
        result = run(tool, "--plumb", plumb, "--model", "m", "--out", os.path.join(folder, "drift"), "--rounds",
                     "2", "--variant", "base", "--variant", "plan:FAKE_SHA=bbb,FAKE_SHA_DRIFT=1",
                     "--bits-may-differ", env=env)
        check(result.returncode == 1 and "run 'plan round 2' line 'decode 1 stream' drew other tokens; expected "
              "bbb" in result.stdout, "--bits-may-differ still fails a variant whose rounds differ", result)

        result = run(tool, "--plumb", plumb, "--model", "m", "--out", os.path.join(folder, "nobound"), "--rounds",
                     "1", "--variant", "a:FAKE_NO_GEMM=1", "--variant", "b:FAKE_HANG=1", "--timeout", "2", env=env)
        check(result.returncode == 1 and "run 'b round 1' exited timeout after 2 s; expected 0" in result.stdout,
              "a run past its time is named", result)
        check("prompt 2048 tokens a" in " ".join(result.stdout.split()) and " - " in result.stdout,
              "a bound the run could not measure prints as -", result)

        # A second build: the same made-up plumb, 20 tokens/s faster, reached through plumb=PATH.
        other = os.path.join(folder, "other-plumb")
        with open(other, "w") as file:
            file.write(f"#!/bin/sh\nFAKE_SPEED=120 exec {plumb} \"$@\"\n")
        os.chmod(other, 0o755)
        trees = os.path.join(folder, "trees")
        result = run(tool, "--plumb", plumb, "--model", "m", "--out", trees, "--rounds", "1", "--variant", "base",
                     "--variant", f"other:plumb={other}", "--json", table, env=env)
        rows = {(row["line"], row["variant"]): row for row in json.load(open(table))["rows"]}
        check(result.returncode == 0 and rows[("decode 1 stream", "other")]["runs"][0] >= 120,
              "a variant's plumb=PATH runs that build", result)
        result = run(tool, "--model", "m", "--out", trees, "--variant", "base", "--variant", f"other:plumb={other}",
                     env=env)
        check(result.returncode == 2 and "plumb=PATH in every variant" in result.stderr,
              "a variant with no build to run is refused", result)

        before = open(order).read()
        result = run(tool, "--from", out, "--variant", "slow", "--variant", "fast", env=env)
        check(result.returncode == 0 and open(order).read() == before, "--from runs nothing", result)
        check("CHECKS passed: 6 runs" in result.stdout, "--from summarizes the folder", result)
        result = run(tool, "--from", out, "--variant", "slow", "--variant", "absent", env=env)
        check(result.returncode == 1 and "variant 'absent' has no runs" in result.stdout,
              "a variant without runs is named", result)
    print("ab_bench: 17 checks passed")


if __name__ == "__main__":
    main()
