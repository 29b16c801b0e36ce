#!/usr/bin/env python3
"""End-to-end checks of `plumb info` and `plumb models` through the built binary.

Every malformed fixture must exit 2 with exactly its expected line on stderr and nothing on stdout (never a crash);
a valid sharded MLX-style checkpoint, given as a directory and as org/name in a fake hub cache, must be described
exactly. Usage: info_cli_test.py PLUMB FIXTURES_DIR
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

PLUMB, FIXTURES = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("generate", os.path.join(FIXTURES, "generate.py"))
generate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generate)
failures = []


def run(*args, env=None):
    merged = dict(os.environ, **(env or {}))
    done = subprocess.run([PLUMB, *args], capture_output=True, text=True, env=merged, timeout=60)
    return done.returncode, done.stdout, done.stderr


def expect(name, expected, got):
    if expected != got:
        failures.append(f"{name}:\n  expected {expected!r}\n  got      {got!r}")


def check_malformed():
    with open(os.path.join(FIXTURES, "expected.txt")) as listing:
        cases = [line.rstrip("\n").split("\t", 1) for line in listing if line.strip() and not line.startswith("#")]
    for index, (fixture, message) in enumerate(cases):
        path = os.path.join(FIXTURES, fixture)
        code, out, err = run("info", path)
        name = f"case {index} '{fixture}'"
        expect(f"{name} exit code (negative means a signal)", 2, code)
        expect(f"{name} stdout", "", out)
        expect(f"{name} stderr", "plumb info: " + message.replace("{path}", path) + "\n", err)
    return len(cases)


def write_checkpoint(directory, config):
    def entry(dtype, shape, begin, end):
        return generate.entry(dtype, shape, begin, end)
    shard_one = generate.safetensors({"layer.weight": entry("U32", [4, 2], 0, 32),
                                      "layer.scales": entry("BF16", [4, 1], 32, 40)}, bytes(40))
    shard_two = generate.safetensors({"layer.biases": entry("BF16", [4, 1], 0, 8),
                                      "norm": entry("F32", [4], 8, 24)}, bytes(24))
    os.makedirs(directory, exist_ok=True)
    for name, contents in (("model-00001-of-00002.safetensors", shard_one),
                           ("model-00002-of-00002.safetensors", shard_two)):
        with open(os.path.join(directory, name), "wb") as out:
            out.write(contents)
    weight_map = {"layer.weight": "model-00001-of-00002.safetensors", "layer.scales": "model-00001-of-00002.safetensors",
                  "layer.biases": "model-00002-of-00002.safetensors", "norm": "model-00002-of-00002.safetensors"}
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as out:
        json.dump({"metadata": {"total_size": 64}, "weight_map": weight_map}, out)
    with open(os.path.join(directory, "config.json"), "w") as out:
        json.dump(config, out)


CONFIG = {
    "model_type": "gemma4", "vocab_size": 16,
    "text_config": {"model_type": "gemma4_text", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
                    "num_key_value_heads": 1, "head_dim": 4, "global_head_dim": 8, "final_logit_softcapping": None},
    "vision_config": {"model_type": "gemma4_vision", "hidden_size": 4, "num_hidden_layers": 1,
                      "num_attention_heads": 1, "patch_size": 2},
    "quantization": {"group_size": 64, "bits": 4, "mode": "affine", "layer": {"group_size": 64, "bits": 8}},
}


def described(model_line):
    return "\n".join([
        f"model     {model_line}",
        "family    gemma4 (text gemma4_text, vision gemma4_vision)",
        "format    safetensors, sharded in 2 files (model.safetensors.index.json); MLX affine 4-bit, group 64, "
        "1 per-module override",
        "dtypes    f32 1 tensor 16 B, bf16 2 tensors 16 B, u32 1 tensor 32 B",
        "text      hidden 8, layers 2, heads 2, kv heads 1, head dim 4, global head dim 8, vocab 16",
        "vision    hidden 4, layers 1, heads 1, patch 2",
        "tensors   4 tensors, 64 B (64 bytes)",
    ]) + "\n"


def check_valid(scratch):
    local = os.path.join(scratch, "local")
    write_checkpoint(local, CONFIG)
    expect("valid directory", (0, described(local), ""), run("info", local))
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = os.path.join(scratch, "hub", "models--org--tiny")
    shutil.copytree(local, os.path.join(repo, "snapshots", commit))
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as out:
        out.write(commit)
    env = {"HF_HUB_CACHE": os.path.join(scratch, "hub")}
    snapshot = os.path.join(repo, "snapshots", commit)
    expect("hub name", (0, described(f"{snapshot} (org/tiny@main, commit {commit})"), ""),
           run("info", "org/tiny", env=env))
    listing = (f"cache {scratch}/hub (from HF_HUB_CACHE)\n"
               "MODEL     REVISION  COMMIT        SIZE\n"
               f"org/tiny  main      {commit[:12]}  {human(snapshot)}\n")
    expect("models", (0, listing, ""), run("models", env=env))


def human(directory):
    total = sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))
    return f"{total} B" if total < 1024 else f"{total / 1024:.2f} KiB"


def check_bad_config(scratch):
    broken = json.loads(json.dumps(CONFIG))
    broken["text_config"]["hidden_size"] = "8"
    directory = os.path.join(scratch, "bad_config")
    write_checkpoint(directory, broken)
    line = (f"plumb info: {directory}/config.json: field 'text_config.hidden_size' has the wrong type; "
            "expected an integer, got a string \"8\"\n")
    expect("bad config", (2, "", line), run("info", directory))
    code, out, err = run("info", "org/absent", env={"HF_HUB_CACHE": os.path.join(scratch, "hub")})
    expect("absent model exit code", 2, code)
    expect("absent model lines", 1, err.count("\n"))
    expect("absent model names the refs file", True, "models--org--absent/refs/main" in err)


def main():
    count = check_malformed()
    with tempfile.TemporaryDirectory(prefix="plumb-info-") as scratch:
        check_valid(scratch)
        check_bad_config(scratch)
    for failure in failures:
        print(failure)
    print(f"info_cli: {count} malformed fixtures, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
