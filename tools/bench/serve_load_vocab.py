"""Tokenizer coverage of a checkpoint for serve_load.py. A checkpoint whose tokenizer lacks ids the model can
generate (`plumb make-tiny gemma4 DIR --geometry 12b` pairs 262144-id weights with a 512-id tokenizer) streams
no text for those ids, so a client cannot see its tokens arrive. covering_copy() makes a directory of links to
the checkpoint's files with a tokenizer.json that gives every missing id an ordinary piece ("\u2581w<id>", text
" w<id>"); no merge produces these pieces, so prompts encode exactly as before, and weights are untouched."""

import json
import os
import tempfile

PIECE_PREFIX = "\u2581w"


def read_json(path):
    with open(path, encoding="utf-8") as source:
        return json.load(source)


def model_vocab(config):
    """vocab_size of config.json, or of its text_config (Gemma 4 nests it)."""
    return config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")


def missing_ids(model_dir):
    """(ids of the model's vocabulary the tokenizer has no piece for, the model's vocabulary size)."""
    vocab = model_vocab(read_json(os.path.join(model_dir, "config.json")))
    tokenizer = read_json(os.path.join(model_dir, "tokenizer.json"))
    if not isinstance(vocab, int) or vocab <= 0:
        raise ValueError(f"serve_load: config.json in '{model_dir}' has no vocab_size; expected a positive integer")
    have = set(tokenizer["model"]["vocab"].values()) | {token["id"] for token in tokenizer.get("added_tokens", [])}
    return [i for i in range(vocab) if i not in have], vocab


def covering_copy(model_dir):
    """A temporary directory serving the checkpoint with every id covered: (directory, pieces added)."""
    missing, _ = missing_ids(model_dir)
    tokenizer = read_json(os.path.join(model_dir, "tokenizer.json"))
    if tokenizer["model"].get("type") != "BPE":
        raise ValueError(f"serve_load: tokenizer model of '{model_dir}' is {tokenizer['model'].get('type')}; "
                         "expected BPE to add pieces to")
    pieces = tokenizer["model"]["vocab"]
    for i in missing:
        pieces[f"{PIECE_PREFIX}{i}"] = i
    copy = tempfile.mkdtemp(prefix="serve-load-model-")
    for name in os.listdir(model_dir):
        if name != "tokenizer.json":
            os.symlink(os.path.abspath(os.path.join(model_dir, name)), os.path.join(copy, name))
    with open(os.path.join(copy, "tokenizer.json"), "w", encoding="utf-8") as out:
        json.dump(tokenizer, out, ensure_ascii=False)
    return copy, len(missing)
