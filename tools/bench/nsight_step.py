#!/usr/bin/env python3
"""Where one forward's device time goes, from Nsight Compute's per-kernel durations.

    PLUMB_CUDA_GRAPHS=0 ncu --metrics gpu__time_duration.sum --csv --cache-control none --clock-control none \\
        --launch-skip S --launch-count C plumb bench MODEL --backend cuda --streams 32 --decode-steps 2 \\
        --repeats 1 > step.csv
    nsight_step.py step.csv [--step N] [--top K]

Launches are cut into forwards at each launch of the embedding kernel (a forward's first). The chosen forward
(--step, counted from 0; negative counts from the end; default the last one that ends before the capture does)
is summed per kernel name and grid: microseconds in all, share of the forward, launches and microseconds each,
largest first. Nsight serializes the launches and, with --cache-control none, starts each with cold caches, so
the sum is above a graph step's time; it ranks kernels, it is not a step time. Exit status 2 for a file that
is not such a capture, naming what is missing.
"""
import argparse
import collections
import csv
import re
import sys

METRIC = "gpu__time_duration.sum"
COLUMNS = ("ID", "Kernel Name", "Grid Size", "Metric Name", "Metric Unit", "Metric Value")
TO_MICROSECONDS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
                   "second": 1e6, "s": 1e6}


class CaptureError(Exception):
    pass


def read_launches(path):
    """(id, kernel name, grid, microseconds) of each launch with the duration metric, in launch order."""
    with open(path, newline="") as f:
        rows = [line for line in f if line.startswith('"')]  # ncu's own messages are not quoted
    if not rows:
        raise CaptureError(f"{path}: no CSV rows; expected ncu --csv output")
    reader = csv.DictReader(rows)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise CaptureError(f"{path}: columns {', '.join(missing)} missing; expected ncu --csv output")
    launches = []
    for row in reader:
        if row["Metric Name"] != METRIC:
            continue
        unit = row["Metric Unit"]
        if unit not in TO_MICROSECONDS:
            raise CaptureError(f"{path}: launch {row['ID']} has unit '{unit}'; expected one of "
                               f"{', '.join(sorted(TO_MICROSECONDS))}")
        value = float(row["Metric Value"].replace(",", ""))
        launches.append((int(row["ID"]), row["Kernel Name"], row["Grid Size"], value * TO_MICROSECONDS[unit]))
    if not launches:
        raise CaptureError(f"{path}: no '{METRIC}' values; expected ncu --metrics {METRIC}")
    launches.sort(key=lambda launch: launch[0])
    return launches


def forwards(launches):
    """The launches cut at each embedding launch: a list of forwards, the last one possibly cut short."""
    starts = [i for i, launch in enumerate(launches) if "embed_kernel" in launch[1]]
    if not starts:
        raise CaptureError("no embed_kernel launch in the capture; expected whole forwards")
    return [launches[a:b] for a, b in zip(starts, starts[1:] + [len(launches)])]


def short_name(name):
    """The kernel's name without its parameter list."""
    return re.sub(r"\(.*", "", name).strip()


def summary(forward, top):
    total = sum(launch[3] for launch in forward)
    groups = collections.OrderedDict()
    for _, name, grid, us in forward:
        count, sum_us = groups.get((short_name(name), grid), (0, 0.0))
        groups[(short_name(name), grid)] = (count + 1, sum_us + us)
    lines = [f"{len(forward)} launches, {total:.1f} us summed"]
    ranked = sorted(groups.items(), key=lambda item: -item[1][1])
    for (name, grid), (count, sum_us) in ranked[:top]:
        lines.append(f"{sum_us:10.1f} us {100 * sum_us / total:5.1f}% {count:5d} x {sum_us / count:8.2f} us  "
                     f"{name} {grid}")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="ncu --csv output with " + METRIC)
    parser.add_argument("--step", type=int, default=None, help="forward index (default: the last whole one)")
    parser.add_argument("--top", type=int, default=30, help="kernel groups to print")
    args = parser.parse_args(argv)
    try:
        steps = forwards(read_launches(args.csv))
        # The last forward may be cut by --launch-count; without --step take the one before it when there is.
        index = args.step if args.step is not None else (-2 if len(steps) > 1 else -1)
        if not -len(steps) <= index < len(steps):
            raise CaptureError(f"{args.csv}: forward {index} not in the capture; expected -{len(steps)} to "
                               f"{len(steps) - 1}")
    except (CaptureError, OSError) as error:
        print(f"nsight_step: {error}", file=sys.stderr)
        return 2
    print(f"forward {index % len(steps)} of {len(steps)} in the capture: " +
          "\n".join(summary(steps[index], args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
