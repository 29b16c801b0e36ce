#!/usr/bin/env python3
"""Says, kernel by kernel, whether a change left the CUDA kernels' machine code the same byte for byte.

    tools/cuda/kernel-code-diff.py [--base REV] [--build DIR] [--arch sm_90a] [--jobs N]
                                   [--rename PATTERN=REPLACEMENT ...] [SOURCE.cu ...]

Compiles each CUDA source of the build (or those named) twice to a cubin, as REV has it and as the working tree
has it, with the build's own nvcc command (from DIR's compile database), and compares each kernel's code
section; a kernel moved to another source is compared with itself there. A kernel whose code is the same runs
as it ran at REV, so a refactor that leaves every kernel the same needs no GPU run to show it changed no bit
and no timing; a kernel that changed does. Without sources named it takes the ones whose text, or a header
they include, differs from REV.

A kernel the change renamed (a template parameter added, say) is compared under its new name with --rename:
a regular expression over REV's mangled names and its replacement, as re.sub takes them, applied in order.

Prints one line per kernel that is not the same or moved, then
    KERNEL-CODE <n> same, <n> changed, <n> added, <n> removed (<arch>, base <rev>)
and exits 0; 2 when a source did not compile. Needs a configured CUDA build (cmake -DPLUMB_CUDA=ON -G Ninja).
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True, text=True).stdout


def compile_database(build):
    """The build's nvcc commands by absolute source path, from ninja's compile database."""
    try:
        text = subprocess.run(["ninja", "-C", build, "-t", "compdb"], check=True, capture_output=True,
                              text=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"kernel-code-diff: build '{build}' has no compile database; expected a configured Ninja "
                 f"build, got {error}")
    commands = {}
    for entry in json.loads(text):
        source = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if source.endswith(".cu") and "nvcc" in entry["command"]:
            commands[source] = entry
    if not commands:
        sys.exit(f"kernel-code-diff: build '{build}' compiles no CUDA source; expected one configured with "
                 "-DPLUMB_CUDA=ON")
    return commands


def includes_of(path, tree, seen):
    """The project headers `path` includes, transitively, as paths relative to tree/src."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return seen
    for name in INCLUDE.findall(text):
        header = os.path.join(tree, "src", name)
        if name not in seen and os.path.exists(header):
            seen.add(name)
            includes_of(header, tree, seen)
    return seen


def changed_sources(commands, base):
    """The build's CUDA sources whose text, or a header's they include, differs from `base`."""
    changed = {os.path.normpath(os.path.join(ROOT, name)) for name in git("diff", "--name-only", base).split()}
    changed |= {os.path.normpath(os.path.join(ROOT, name))
                for name in git("ls-files", "--others", "--exclude-standard").split()}
    picked = []
    for source in sorted(commands):
        headers = {os.path.join(ROOT, "src", name) for name in includes_of(source, ROOT, set())}
        if source in changed or headers & changed:
            picked.append(source)
    return picked


def cubin_command(entry, source, tree, arch, cubin):
    """The build's command for `source`, compiling `tree`'s copy of it to a cubin for `arch`."""
    words = shlex.split(entry["command"])
    if words[0].endswith("capture-resources.sh"):  # the build's launcher that keeps the resource report
        words = words[1:]
    kept, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in ("-MT", "-MF", "-o"):
            skip = True
        elif word in ("-MD", "-c", "--resource-usage") or word.startswith("--generate-code"):
            continue
        elif word == source or os.path.normpath(os.path.join(entry["directory"], word)) == source:
            kept.append(os.path.join(tree, os.path.relpath(source, ROOT)))
        else:
            kept.append(word.replace(os.path.join(ROOT, "src"), os.path.join(tree, "src")))
    return [words[0], *kept, "-cubin", f"-arch={arch}", "-o", cubin]


def target_arch(commands):
    for entry in commands.values():
        found = re.search(r"code=\[?[^\]]*?(sm_\w+)", entry["command"])
        if found:
            return found.group(1)
    return "sm_90a"


def kernel_sections(path):
    """Each function's name and code section in an ELF cubin, keyed by its name with the per-file hashes of
    anonymous namespaces taken out (they differ between two copies of one file)."""
    with open(path, "rb") as file:
        data = file.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"kernel-code-diff: cubin '{path}' is not a 64-bit ELF file")
    section_offset = struct.unpack_from("<Q", data, 0x28)[0]
    entry_size, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, section_offset + i * entry_size) for i in range(count)]
    names_at = headers[names_index][4]
    sections = {}
    for name_offset, kind, _flags, _address, offset, size, *_ in headers:
        name = data[names_at + name_offset:data.index(b"\0", names_at + name_offset)].decode()
        if name.startswith(".text.") and kind != 8:  # 8: no bits in the file
            key = re.sub(r"_GLOBAL__N__[0-9a-f]{8}_(\d+_\w+?_cu)_[0-9a-f]{8}", r"_GLOBAL__N__\1", name[6:])
            sections[key] = (name[6:], data[offset:offset + size])
    return sections


def readable(name):
    if shutil.which("c++filt"):
        return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip() or name
    return name


def compile_one(command):
    result = subprocess.run(command, capture_output=True, text=True)
    return result.returncode, result.stderr


def any_file(key):
    """A kernel key without the source file of its anonymous namespace, to find a kernel that moved."""
    return re.sub(r"\d+_GLOBAL__N__\d+_\w+?_cu", "_GLOBAL__N_", key)


def compare(counts, where, name, before, after):
    if before == after:
        counts["same"] += 1
        if " -> " in where:
            print(f"moved    {where}: {readable(name)}")
        return
    counts["changed"] += 1
    print(f"changed  {where}: {readable(name)}: {len(before) // 16} -> {len(after) // 16} instructions")


def renamed(key, renames):
    """REV's kernel key under the tree's name (--rename, in order)."""
    for pattern, replacement in renames:
        key = pattern.sub(replacement, key)
    return key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare with (default HEAD)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build-cuda"), help="a configured CUDA build")
    parser.add_argument("--arch", help="the cubin's target (default: the build's first, as sm_90a)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rename", action="append", default=[], metavar="PATTERN=REPLACEMENT",
                        help="REV's kernel names PATTERN (a regex) are REPLACEMENT in the tree")
    parser.add_argument("sources", nargs="*", help="CUDA sources (default: those the change touches)")
    options = parser.parse_args()
    renames = []
    for rename in options.rename:
        pattern, separator, replacement = rename.partition("=")
        if not separator:
            sys.exit(f"kernel-code-diff: --rename '{rename}' has no '='; expected PATTERN=REPLACEMENT")
        renames.append((re.compile(pattern), replacement))
    base = git("rev-parse", "--short", options.base).strip()
    commands = compile_database(os.path.abspath(options.build))
    arch = options.arch or target_arch(commands)
    sources = [os.path.abspath(s) for s in options.sources] or changed_sources(commands, options.base)
    for source in sources:
        if source not in commands:
            sys.exit(f"kernel-code-diff: source '{source}' is not a CUDA source of the build")
    counts = {"same": 0, "changed": 0, "added": 0, "removed": 0}
    with tempfile.TemporaryDirectory() as scratch:
        base_tree = os.path.join(scratch, "base")
        os.makedirs(base_tree)
        archive = subprocess.run(["git", "-C", ROOT, "archive", options.base], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", base_tree], input=archive, check=True)
        jobs = []
        for index, source in enumerate(sources):
            for side, tree in (("base", base_tree), ("tree", ROOT)):
                cubin = os.path.join(scratch, f"{index}-{side}.cubin")
                exists = os.path.exists(os.path.join(tree, os.path.relpath(source, ROOT)))
                command = cubin_command(commands[source], source, tree, arch, cubin) if exists else None
                jobs.append((source, side, cubin, command))
        with concurrent.futures.ThreadPoolExecutor(max(1, options.jobs)) as pool:
            results = list(pool.map(lambda job: compile_one(job[3]) if job[3] else (0, ""), jobs))
        failed = False
        for (source, side, _cubin, command), (code, errors) in zip(jobs, results):
            if command and code != 0:
                failed = True
                print(f"kernel-code-diff: source '{os.path.relpath(source, ROOT)}' ({side}) did not compile; "
                      f"expected exit 0, got {code}\n{errors}", file=sys.stderr)
        if failed:
            return 2
        removed, added = {}, {}  # kernels that left a file or came to one, by their key in any file
        for base_job, tree_job in zip(jobs[0::2], jobs[1::2]):
            before = {renamed(key, renames): value
                      for key, value in (kernel_sections(base_job[2]) if base_job[3] else {}).items()}
            after = kernel_sections(tree_job[2]) if tree_job[3] else {}
            file = os.path.relpath(base_job[0], ROOT)
            for key in sorted(set(before) | set(after)):
                if key not in after:
                    removed[any_file(key)] = (file, *before[key])
                elif key not in before:
                    added[any_file(key)] = (file, *after[key])
                else:
                    compare(counts, file, after[key][0], before[key][1], after[key][1])
        # A kernel moved to another source is compared with itself there (its anonymous namespace differs).
        for key in sorted(set(removed) | set(added)):
            if key in removed and key in added:
                compare(counts, f"{removed[key][0]} -> {added[key][0]}", added[key][1], removed[key][2],
                        added[key][2])
            elif key in removed:
                counts["removed"] += 1
                print(f"removed  {removed[key][0]}: {readable(removed[key][1])}")
            else:
                counts["added"] += 1
                print(f"added    {added[key][0]}: {readable(added[key][1])}")
    print(f"KERNEL-CODE {counts['same']} same, {counts['changed']} changed, {counts['added']} added, "
          f"{counts['removed']} removed ({arch}, base {base})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
