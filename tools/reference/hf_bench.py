#!/usr/bin/env python3
"""Hugging Face transformers (bf16, sdpa attention) on the same checkpoint and prompts as `plumb bench`, for the
ratio in docs/benchmarks.md. Run it on the GPU machine in the same session as `plumb bench`:

    plumb make-tiny gemma4 DIR --geometry 12b
    plumb bench DIR --backend cuda --json plumb.json
    python3 tools/reference/hf_bench.py DIR --json hf.json

It measures, like plumb bench: the device copy bandwidth and the bf16 matmul rate (torch, 8192 cubed, random
operands), decode tokens/s of 1 stream and the aggregate of several streams batched in one forward (greedy, the
KV cache of transformers), prompt tokens/s and time to first token for one forward of the whole prompt (logits of
the last row only), and peak memory. Prompt `s` of length n is <bos> (2), then 3 + (i * 7919 + s * 104729) mod
(vocab - 3), as in src/cli/bench_model.cpp. Needs torch and transformers 5.x.
"""

import argparse
import hashlib
import json
import struct
import sys
import time

import torch


def bench_prompt(stream, length, vocab):
    return [2 if i == 0 else 3 + (i * 7919 + stream * 104729) % (vocab - 3) for i in range(length)]


def token_sha(tokens):
    return hashlib.sha256(b"".join(struct.pack("<i", t) for t in tokens)).hexdigest()


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def timed_ms(run, warmups, repeats):
    for _ in range(warmups):
        run()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return median(times)


def bounds(gemm_size):
    elements = 1 << 29  # 1 GiB of bf16 each way
    source = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
    target = torch.empty_like(source)
    copy_ms = timed_ms(lambda: target.copy_(source), 2, 9)
    a = torch.randn(gemm_size, gemm_size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(gemm_size, gemm_size, device="cuda", dtype=torch.bfloat16)
    gemm_ms = timed_ms(lambda: torch.matmul(a, b), 3, 10)
    del source, target, a, b
    torch.cuda.empty_cache()
    return 2 * elements * 2 / (copy_ms * 1e-3), 2 * gemm_size**3 / (gemm_ms * 1e-3)


def load_model(path):
    config = json.load(open(f"{path}/config.json"))
    if config.get("model_type") == "gemma4_unified":
        from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedForConditionalGeneration

        cls = Gemma4UnifiedForConditionalGeneration
    else:
        from transformers import AutoModelForCausalLM

        cls = AutoModelForCausalLM
    model = cls.from_pretrained(path, dtype=torch.bfloat16, attn_implementation="sdpa", device_map="cuda")
    text = config.get("text_config", config)
    return model.eval(), text["vocab_size"]


@torch.no_grad()
def decode(model, vocab, streams, prompt, steps):
    ids = torch.tensor([bench_prompt(s, prompt, vocab) for s in range(streams)], device="cuda")
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    tokens = [[t] for t in out.logits[:, -1].argmax(-1).tolist()]
    step_seconds = []
    for _ in range(steps):
        last = torch.tensor([[t[-1]] for t in tokens], device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = model(input_ids=last, past_key_values=cache, use_cache=True)
        chosen = out.logits[:, -1].argmax(-1).tolist()  # waits for the step
        step_seconds.append(time.perf_counter() - start)
        cache = out.past_key_values
        for t, token in zip(tokens, chosen):
            t.append(token)
    return step_seconds, tokens


@torch.no_grad()
def prompt_run(model, vocab, length, repeats):
    ids = torch.tensor([bench_prompt(0, length, vocab)], device="cuda")
    seconds, first = [], []
    for r in range(repeats + 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        first.append(int(out.logits[0, -1].argmax()))
        if r > 0:
            seconds.append(time.perf_counter() - start)
        del out
    return seconds, first


def counts(text):
    return [int(item) for item in text.split(",") if item.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--streams", default="1,8,32")
    parser.add_argument("--prompts", default="2048,8192")
    parser.add_argument("--decode-prompt", type=int, default=128)
    parser.add_argument("--decode-steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gemm-size", type=int, default=8192)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    import transformers

    record = {"torch": torch.__version__, "transformers": transformers.__version__, "decode": [], "prompt": []}
    copy_rate, gemm_rate = bounds(args.gemm_size)
    record["bounds"] = {"copy_bytes_per_second": copy_rate, "gemm_flops_per_second": gemm_rate}
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name()}")
    print(f"bounds: device copy {copy_rate * 1e-9:.1f} GB/s (read + written); bf16 matmul {gemm_rate * 1e-12:.1f} "
          f"TFLOP/s ({args.gemm_size}^3)")
    start = time.perf_counter()
    model, vocab = load_model(args.model)
    print(f"model: {args.model} loaded in {time.perf_counter() - start:.1f} s (bf16, sdpa)")
    failures = 0
    for streams in counts(args.streams):
        try:
            steps, tokens = decode(model, vocab, streams, args.decode_prompt, args.decode_steps)
            rate = streams / median(steps)
            print(f"decode  {streams:3d} streams: {rate:9.1f} tokens/s ({median(steps) * 1e3:.3f} ms/step, median of "
                  f"{len(steps)}); stream 0 token_sha {token_sha(tokens[0])[:12]}")
            record["decode"].append({"streams": streams, "tokens_per_second": rate, "step_seconds": steps,
                                     "stream0_token_sha": token_sha(tokens[0])})
        except Exception as error:  # noqa: BLE001 - report and go on to the next measurement
            failures += 1
            print(f"decode {streams} streams: failed: {error}")
        torch.cuda.empty_cache()
    for length in counts(args.prompts):
        try:
            seconds, first = prompt_run(model, vocab, length, args.repeats)
            rate = length / median(seconds)
            print(f"prompt {length:6d} tokens: {rate:9.1f} tokens/s, time to first token {median(seconds):.3f} s "
                  f"(median of {len(seconds)}); first token {first[0]}")
            record["prompt"].append({"tokens": length, "tokens_per_second": rate, "seconds": seconds,
                                     "first_token": first[0]})
        except Exception as error:  # noqa: BLE001
            failures += 1
            print(f"prompt {length}: failed: {error}")
        torch.cuda.empty_cache()
    peak = torch.cuda.max_memory_allocated()
    record["peak_device_bytes"] = peak
    print(f"peak device memory: {peak / 2**30:.2f} GiB (torch's allocator)")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(record, file, indent=2)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
