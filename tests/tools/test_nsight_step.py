#!/usr/bin/env python3
"""tools/bench/nsight_step.py on made-up captures: forwards cut at the embedding launches, the default and a
chosen forward, units, and clear refusals of files that are not captures.

    test_nsight_step.py PATH/TO/nsight_step.py
"""
import os
import subprocess
import sys
import tempfile

HEADER = '"ID","Process ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"'


def row(launch_id, name, grid, value, unit="nsecond", metric="gpu__time_duration.sum"):
    return f'"{launch_id}","7","{name}","(256, 1, 1)","{grid}","{metric}","{unit}","{value}"'


def capture():
    lines = ["==PROF== Connected to process 7", HEADER]
    launch = 0
    # Three forwards: embed, two matmuls, a norm; the third is cut after its matmul.
    for forward, scale in enumerate((1, 2, 3)):
        for name, grid, ns in (("plumb::embed_kernel(EmbedArgs)", "(1, 15, 1)", 1000),
                               ("void matmul_kernel<16, 0>(Params)", "(30, 1, 9)", 30000),
                               ("void matmul_kernel<16, 0>(Params)", "(30, 1, 9)", 34000),
                               ("plumb::residual_norm_kernel(Args)", "(1, 1, 1)", "8,000")):
            if forward == 2 and name.startswith("plumb::residual"):
                break
            value = ns if isinstance(ns, str) else ns * scale
            lines.append(row(launch, name, grid, value))
            lines.append(row(launch, name, grid, 1, unit="%", metric="sm__throughput.avg.pct_of_peak"))
            launch += 1
    lines.append(row(launch, "plumb::late(Args)", "(1, 1, 1)", 2.5, unit="usecond"))
    return "\n".join(lines) + "\n"


def run(tool, text, *args):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "step.csv")
        with open(path, "w") as f:
            f.write(text)
        done = subprocess.run([sys.executable, tool, path, *args], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def expect(condition, what, got):
    if not condition:
        print(f"FAIL {what}; got:\n{got}")
        sys.exit(1)


def main():
    tool = sys.argv[1]
    code, out, err = run(tool, capture())
    expect(code == 0, "a capture exits 0", err)
    # Default: the last whole forward (the second; the third is cut short).
    expect(out.startswith("forward 1 of 3 in the capture: 4 launches, 138.0 us summed"), "the second forward", out)
    expect("128.0 us  92.8%     2 x    64.00 us  void matmul_kernel<16, 0> (30, 1, 9)" in out,
           "its matmuls grouped by name and grid", out)
    expect("8.0 us   5.8%     1 x     8.00 us  plumb::residual_norm_kernel" in out, "a value with a comma", out)

    code, out, _ = run(tool, capture(), "--step", "-1", "--top", "1")
    expect(code == 0 and "forward 2 of 3 in the capture: 4 launches, 197.5 us summed" in out,
           "the cut forward, with the usecond launch", out)
    expect(out.count(" x ") == 1, "--top 1 prints one group", out)

    code, _, err = run(tool, capture(), "--step", "3")
    expect(code == 2 and "forward 3 not in the capture; expected -3 to 2" in err, "a step out of range", err)
    code, _, err = run(tool, capture().replace('"Grid Size",', '"Grid",'))
    expect(code == 2 and "columns Grid Size missing" in err, "a missing column is named", err)
    code, _, err = run(tool, "nothing here\n")
    expect(code == 2 and "no CSV rows" in err, "a file with no rows", err)
    code, _, err = run(tool, capture().replace("embed_kernel", "other_kernel"))
    expect(code == 2 and "no embed_kernel launch" in err, "a capture without forwards", err)
    code, _, err = run(tool, capture().replace('"nsecond"', '"furlong"', 1))
    expect(code == 2 and "has unit 'furlong'" in err, "an unknown unit is named", err)
    print("nsight_step: 9 checks passed")


if __name__ == "__main__":
    main()
