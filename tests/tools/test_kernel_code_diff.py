#!/usr/bin/env python3
"""tools/cuda/kernel-code-diff.py on a made-up repository of one CUDA source: a kernel left alone is the same,
a kernel edited is changed, a kernel written is added, a kernel renamed is removed and added (the same under
--rename), a kernel moved to another source is compared with itself there (moved, or changed where edited), and
a source outside the build or a rename without '=' is refused by name. Exits
77 (skipped) without nvcc or ninja.

    test_kernel_code_diff.py PATH/TO/kernel-code-diff.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

KERNELS = """
__global__ void kept(float* x) { x[threadIdx.x] *= 2.0f; }
__global__ void edited(float* x) { x[threadIdx.x] += BODY; }
"""

# A kernel in an anonymous namespace (whose mangled name carries its file's name), launched so that it is kept.
MOVING = """
namespace {
__global__ void moving(float* x) { x[0] = VALUE; }
}  // namespace
void launch_moving(float* x) { moving<<<1, 1>>>(x); }
"""


def nvcc():
    found = shutil.which("nvcc")
    return found or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def run(*args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def commit(repo, message):
    for command in (["git", "add", "."], ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
                                          message]):
        assert run(*command, cwd=repo).returncode == 0, command


def make_repository(folder, compiler):
    repo, build = os.path.join(folder, "repo"), os.path.join(folder, "build")
    os.makedirs(os.path.join(repo, "tools", "cuda"))
    os.makedirs(os.path.join(repo, "src"))
    os.makedirs(build)
    shutil.copy(sys.argv[1], os.path.join(repo, "tools", "cuda", "kernel-code-diff.py"))
    source = os.path.join(repo, "src", "a.cu")
    with open(source, "w") as file:
        file.write(KERNELS.replace("BODY", "1.0f"))
    with open(os.path.join(build, "build.ninja"), "w") as file:
        file.write(f"rule nvcc\n  command = {compiler} -O3 --generate-code=arch=compute_90a,code=[compute_90a,"
                   f"sm_90a] -MD -MT $out -MF $out.d -x cu -c $in -o $out\n"
                   f"build a.o: nvcc {source}\n"
                   f"build b.o: nvcc {os.path.join(repo, 'src', 'b.cu')}\n")
    assert run("git", "init", "-q", cwd=repo).returncode == 0
    commit(repo, "base")
    return repo, build, source


def diff(repo, build, *args):
    result = run(sys.executable, os.path.join(repo, "tools", "cuda", "kernel-code-diff.py"), "--build", build,
                 *args, cwd=repo)
    return result.returncode, result.stdout + result.stderr


def write(path, text):
    with open(path, "w") as file:
        file.write(text)


def expect(label, got, *wanted):
    code, text = got
    missing = [w for w in wanted if w not in text]
    if code != 0 or missing:
        sys.exit(f"FAIL {label}: expected exit 0 and {missing}, got exit {code}:\n{text}")
    print(f"ok   {label}")


def main():
    compiler = nvcc()
    if compiler is None or shutil.which("ninja") is None or shutil.which("git") is None:
        print("skipped: needs nvcc, ninja and git")
        return 77
    with tempfile.TemporaryDirectory() as folder:
        repo, build, source = make_repository(folder, compiler)
        expect("nothing changed: no source compiled", diff(repo, build),
               "KERNEL-CODE 0 same, 0 changed, 0 added, 0 removed (sm_90a")
        expect("a source named and unchanged", diff(repo, build, source), "KERNEL-CODE 2 same, 0 changed")
        with open(source, "w") as file:
            file.write(KERNELS.replace("BODY", "3.0f") + "__global__ void written(int* y) { y[0] = 7; }\n")
        expect("one kernel edited, one written", diff(repo, build), "changed  src/a.cu: edited(float*)",
               "added    src/a.cu: written(int*)", "KERNEL-CODE 1 same, 1 changed, 1 added, 0 removed")
        with open(source, "w") as file:
            file.write(KERNELS.replace("BODY", "1.0f").replace("kept(", "kept2("))
        expect("a kernel renamed", diff(repo, build), "removed  src/a.cu: kept(float*)",
               "added    src/a.cu: kept2(float*)", "KERNEL-CODE 1 same, 0 changed, 1 added, 1 removed")
        expect("a kernel renamed, compared under its new name", diff(repo, build, "--rename", "_Z4keptPf=_Z5kept2Pf"),
               "KERNEL-CODE 2 same, 0 changed, 0 added, 0 removed")
        code, text = diff(repo, build, "--rename", "_Z4keptPf")
        if code == 0 or "has no '='; expected PATTERN=REPLACEMENT" not in text:
            sys.exit(f"FAIL a rename without '=': expected a refusal naming it, got exit {code}:\n{text}")
        print("ok   a rename without '=' is refused by name")
        write(source, KERNELS.replace("BODY", "1.0f") + MOVING.replace("VALUE", "5.0f"))
        commit(repo, "a kernel to move")
        other = os.path.join(repo, "src", "b.cu")
        write(source, KERNELS.replace("BODY", "1.0f"))
        write(other, MOVING.replace("VALUE", "5.0f"))
        expect("a kernel moved to another source", diff(repo, build),
               "moved    src/a.cu -> src/b.cu: (anonymous namespace)::moving(float*)",
               "KERNEL-CODE 3 same, 0 changed, 0 added, 0 removed")
        write(other, MOVING.replace("VALUE", "6.0f"))
        expect("a kernel moved and edited", diff(repo, build),
               "changed  src/a.cu -> src/b.cu: (anonymous namespace)::moving(float*)",
               "KERNEL-CODE 2 same, 1 changed, 0 added, 0 removed")
        code, text = diff(repo, build, os.path.join(repo, "src", "c.cu"))
        if code == 0 or "source '" not in text or "is not a CUDA source of the build" not in text:
            sys.exit(f"FAIL a source outside the build: expected a refusal naming it, got exit {code}:\n{text}")
        print("ok   a source outside the build is refused by name")
    return 0


if __name__ == "__main__":
    sys.exit(main())
