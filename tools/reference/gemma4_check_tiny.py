#!/usr/bin/env python3
"""Checks a `plumb make-tiny gemma4` checkpoint against Hugging Face: transformers loads it, the tokenizers library
encodes like Plumb, apply_chat_template renders like Plumb, and Plumb's logits are within the fidelity bound.

Prepare on a machine with Plumb (EXPECTED is a directory this script reads):

    plumb make-tiny gemma4 TINY
    plumb tokenize TINY --lines LINES.jsonl > EXPECTED/ids.jsonl          # LINES: JSON strings, one a line
    plumb template TINY --messages MESSAGES.json --add-generation-prompt > EXPECTED/chat.txt
    plumb score TINY --tokens 2,... --out EXPECTED/logits.npy             # the ids also in EXPECTED/tokens.json

then run `python3 tools/reference/gemma4_check_tiny.py TINY EXPECTED LINES.jsonl MESSAGES.json` where torch,
transformers 5.x and tokenizers are installed. Prints one line per check and exits 1 if any fails.
"""

import json
import sys

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import AutoTokenizer


def load_model(path, dtype):
    from transformers.models.gemma4_unified.modeling_gemma4_unified import Gemma4UnifiedForConditionalGeneration

    model = Gemma4UnifiedForConditionalGeneration.from_pretrained(path, dtype=dtype, attn_implementation="eager")
    return model.eval()


def logits(model, tokens):
    with torch.no_grad():
        return model(input_ids=torch.tensor([tokens]), use_cache=False).logits[0].float().numpy()


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    tiny, expected, lines_path, messages_path = sys.argv[1:]
    failures = 0

    tokenizer = Tokenizer.from_file(f"{tiny}/tokenizer.json")
    lines = [json.loads(line) for line in open(lines_path, encoding="utf-8") if line.strip()]
    plumb_ids = [json.loads(line) for line in open(f"{expected}/ids.jsonl", encoding="utf-8")]
    for index, (text, ids) in enumerate(zip(lines, plumb_ids)):
        hf_ids = tokenizer.encode(text, add_special_tokens=False).ids
        if hf_ids != ids:
            failures += 1
            print(f"tokenize line {index}: {text!r}: hf {hf_ids} plumb {ids}")
    print(f"tokenize: {len(lines)} lines, {failures} differ")

    messages = json.load(open(messages_path, encoding="utf-8"))
    rendered = AutoTokenizer.from_pretrained(tiny).apply_chat_template(messages, tokenize=False,
                                                                       add_generation_prompt=True)
    plumb_rendered = open(f"{expected}/chat.txt", encoding="utf-8").read()
    same_chat = rendered == plumb_rendered or rendered == plumb_rendered.rstrip("\n")
    failures += not same_chat
    print(f"chat template: {'same' if same_chat else 'differs'}\n  hf    {rendered!r}\n  plumb {plumb_rendered!r}")

    tokens = json.load(open(f"{expected}/tokens.json"))
    fp32 = logits(load_model(tiny, torch.float32), tokens)
    bf16 = logits(load_model(tiny, torch.bfloat16), tokens)
    ours = np.load(f"{expected}/logits.npy")
    hf_max, hf_mean = np.abs(bf16 - fp32).max(), np.abs(bf16 - fp32).mean()
    our_max, our_mean = np.abs(ours - fp32).max(), np.abs(ours - fp32).mean()
    within = our_max <= 2 * hf_max and our_mean <= 2 * hf_mean
    failures += not within
    print(f"logits: plumb max {our_max:.5f} mean {our_mean:.6f}; hf bf16 max {hf_max:.5f} mean {hf_mean:.6f}; "
          f"{'within' if within else 'outside'} twice hf bf16")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
