#!/usr/bin/env python3
"""serve_load_vocab.py: a checkpoint whose config claims more ids than its tokenizer has gets a covering copy in
which plumb decodes every added id as " w<id>" and encodes text exactly as before.

    serve_load_vocab_test.py PLUMB TINY_CHECKPOINT_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
import serve_load_vocab  # noqa: E402

PLUMB, TINY = sys.argv[1], sys.argv[2]
EXTRA = 40
TEXT = ["Client 3, request 1: river stone w520 \u2581w512 caf\u00e9 \U0001F600"]


def plumb_lines(command, tokenizer, lines):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as source:
        source.write("".join(json.dumps(line) + "\n" for line in lines))
    try:
        done = subprocess.run([PLUMB, command, tokenizer, "--lines", source.name], capture_output=True, text=True)
    finally:
        os.unlink(source.name)
    if done.returncode != 0:
        raise AssertionError(f"plumb {command} exit status {done.returncode}: {done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines()]


class CoveringCopy(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="serve-load-vocab-test-")
        shutil.copy(os.path.join(TINY, "tokenizer.json"), self.dir)
        with open(os.path.join(TINY, "config.json")) as source:
            config = json.load(source)
        self.tiny_vocab = serve_load_vocab.model_vocab(config)
        config["text_config"]["vocab_size"] = self.tiny_vocab + EXTRA
        with open(os.path.join(self.dir, "config.json"), "w") as out:
            json.dump(config, out)
        self.copy = None

    def tearDown(self):
        shutil.rmtree(self.dir)
        if self.copy:
            shutil.rmtree(self.copy)

    def test_tiny_checkpoint_is_covered(self):
        missing, vocab = serve_load_vocab.missing_ids(TINY)
        self.assertEqual(missing, [], f"ids of {vocab} without a piece; expected none")

    def test_missing_ids_are_named(self):
        missing, vocab = serve_load_vocab.missing_ids(self.dir)
        self.assertEqual(vocab, self.tiny_vocab + EXTRA)
        self.assertEqual(missing, list(range(self.tiny_vocab, vocab)))

    def test_copy_decodes_every_added_id_and_encodes_as_before(self):
        self.copy, added = serve_load_vocab.covering_copy(self.dir)
        self.assertEqual(added, EXTRA)
        self.assertTrue(os.path.islink(os.path.join(self.copy, "config.json")), "config.json is not a link")
        self.assertEqual(serve_load_vocab.missing_ids(self.copy)[0], [])
        added_ids = list(range(self.tiny_vocab, self.tiny_vocab + EXTRA))
        texts = plumb_lines("detokenize", os.path.join(self.copy, "tokenizer.json"), [[i] for i in added_ids])
        for index, (token, text) in enumerate(zip(added_ids, texts)):
            self.assertEqual(text, f" w{token}", f"index {index}: id {token}")
        before = plumb_lines("tokenize", os.path.join(self.dir, "tokenizer.json"), TEXT)
        after = plumb_lines("tokenize", os.path.join(self.copy, "tokenizer.json"), TEXT)
        self.assertEqual(after, before, "the covered tokenizer encodes the text differently")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
