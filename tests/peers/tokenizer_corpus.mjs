// Writes tests/fixtures/tokenizer/corpus.jsonl: one JSON string per line, many scripts and edge cases.
// Deterministic: fixed fragments plus mixtures drawn with a seeded generator. Run: node tests/peers/tokenizer_corpus.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outPath = join(here, "..", "fixtures", "tokenizer", "corpus.jsonl");
// `--check` writes nothing and fails when the committed corpus differs from what this script generates.
const checkOnly = process.argv.includes("--check");

// mulberry32: a small seeded generator, so the mixtures are the same on every run.
function generator(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const scripts = {
  latin: [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you doing today?",
    "Ça va? Très bien, merci. L'été dernier, nous sommes allés à Montréal.",
    "Straße, Größe, Fußgänger — Äpfel und Öl über Übermut.",
    "¿Dónde está la biblioteca? ¡Mañana será otro día, señor Núñez!",
    "Tiếng Việt có nhiều dấu: người, được, những, trường học.",
    "Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Ångström, façade, naïve, coöperate, résumé, jalapeño.",
    "I'm sure you'll see they've done what we'd planned, isn't it?",
    "DON'T SHOUT, I'M LISTENING. WE'LL SEE. YOU'VE GOT IT. HE'D KNOW. IT'S FINE.",
    "the 'quoted' word and ''double'' quotes and `backticks`",
    "Long s test: 'ſ and 'ſt and it'ſ old spelling.",
    "Kelvin sign: 5 \u212A and Angstrom sign: 3 \u212B.",
  ],
  cjk: [
    "我爱自然语言处理。今天天气很好，我们去公园散步吧！",
    "東京都渋谷区で新しいカフェがオープンしました。ぜひ行ってみてください。",
    "ひらがなとカタカナとKanjiが混ざった文章です。",
    "한국어 문장도 토큰화해 봅시다. 안녕하세요, 반갑습니다!",
    "中文标点：“引号”、《书名》、【括号】……——",
    "全角ＡＢＣ１２３と半角ABC123。",
    "漢字の長い列：鬱蒼とした森林の中で憂鬱な気分になった。",
  ],
  arabic: [
    "مرحبا بالعالم! كيف حالك اليوم؟",
    "اللغة العربية جميلة جداً، وَهِيَ لُغَةُ الضَّادِ.",
    "الأرقام: ١٢٣٤٥٦٧٨٩٠ و 2024.",
  ],
  hebrew: ["שלום עולם! מה שלומך?", "עִבְרִית עִם נִקּוּד וּטְעָמִים.", "mixed עברית and English בשורה אחת"],
  devanagari: [
    "नमस्ते दुनिया! आप कैसे हैं?",
    "हिन्दी भाषा में संयुक्ताक्षर: क्ष, त्र, ज्ञ, श्र।",
    "संस्कृतम् एका प्राचीना भाषा अस्ति। १२३४५",
  ],
  thai: ["สวัสดีครับ ยินดีที่ได้รู้จัก", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ", "๑๒๓๔๕ บาท"],
  cyrillic: [
    "Привет, мир! Как дела?",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Українська мова: їжак, ґанок, єдність.",
    "ВСЕ ЗАГЛАВНЫЕ БУКВЫ И цифры 12345.",
  ],
  greek: [
    "Γειά σου Κόσμε! Τι κάνεις;",
    "ΟΔΥΣΣΕΥΣ και οδυσσευς, σίσυφος ΣΊΣΥΦΟΣ.",
    "Ἐν ἀρχῇ ἦν ὁ λόγος, καὶ ὁ λόγος ἦν πρὸς τὸν θεόν.",
  ],
  code: [
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "int main(int argc, char** argv) {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() > 2 ? 0 : 1;\n}",
    "const f = async (x) => { await fetch(`/api/${x}`); return x ?? null; };",
    '{"name": "plumb", "version": "0.1.0", "tags": ["a", "b"], "nested": {"k": [1, 2.5e-3, true, null]}}',
    "SELECT id, name FROM users WHERE age >= 21 AND name LIKE '%son' ORDER BY id DESC;",
    "<div class=\"box\"><p>Hello &amp; welcome</p><br/></div>",
    "fn main() { let s: &str = \"hi\"; println!(\"{s:?}\"); }",
    "    indented with four spaces\n\t\tand two tabs\n        and eight spaces",
    "if (a&&b||!c) { x+=1; y<<=2; z=>w; } // comment /* block */",
    "#include <stdio.h>\n#define MAX(a,b) ((a)>(b)?(a):(b))\n",
    "git commit -m \"fix: handle\\ttabs\" && ls -la | grep '.cpp$'",
    "regex: ^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@example\\.com$",
  ],
  whitespace: [
    "two  spaces",
    "three   spaces and    four",
    "   leading spaces",
    "trailing spaces   ",
    "\ttab\tseparated\tvalues\t",
    "line one\nline two\n\nline four\n\n\n",
    "windows\r\nline\r\nendings\r\n",
    " ",
    "  ",
    "\n",
    "\n\n\n\n\n\n\n\n\n\n",
    "\t\t\t\t",
    " \t \n \r\n ",
    "no\u00a0break\u00a0space",
    "ideographic\u3000space",
    "thin\u2009space and em\u2003space",
    "next\u0085line",
    "byte\ufefforder mark",
    "mongolian\u180evowel separator",
    "line\u2028separator and paragraph\u2029separator",
    "a                                                                b",
    "",
    "runs of next line\u0085\u0085\u0085 and more\u0085",
    "runs of byte order marks \ufeff\ufeff end\ufeff",
    "space then marks \u0085 \ufeff \u180e \u00a0 x",
    "\u0085\u0085",
    "\ufeff\ufeff",
    "\u2028\u2028\u2029",
    "a\u00a0\u00a0\u00a0b\u3000\u3000c",
    "file separators \u001c\u001d\u001e\u001f end",
  ],
  emoji: [
    "😀😃😄😁",
    "I love 🍕 and 🍣!",
    "👨‍👩‍👧‍👦 family ZWJ sequence",
    "👍🏻👍🏼👍🏽👍🏾👍🏿 skin tones",
    "🧑🏽‍💻 technologist with skin tone",
    "🏳️‍🌈 rainbow flag and 🇯🇵🇫🇷🇺🇸 flags",
    "keycaps 1️⃣2️⃣#️⃣ and ❤️ vs ❤",
    "👩🏿‍❤️‍💋‍👨🏻 kiss sequence",
    "emoji🎉inside🎉words",
    "😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀",
  ],
  numbers: [
    "1234567890",
    "3.14159265358979323846264338327950288419716939937510",
    "Prices: $1,299.99, €5.00, ¥10000, 50%.",
    "Phone: +1 (555) 123-4567; date 2024-03-15T12:30:00Z",
    "Full-width ０１２３ and Arabic-Indic ٠١٢٣ and Devanagari ०१२३",
    "Superscripts x² + y³ = z⁴, fractions ½ ¼ ¾, Roman Ⅻ ⅷ",
    "1e10 0x1F 0b1010 007 -42 +17",
    "99999999999999999999999999999999999999999999999999",
  ],
  special: [
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text<eos>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>",
    "<|endoftext|><|endoftext|>",
    "<think>\nreasoning\n</think>\n\nanswer",
    "<start_of_image> [multimodal] <unused0> <pad> <mask> <unk>",
    "almost special: <start_of_tur and <|im_star and < |im_end| >",
    "special<start_of_turn>glued<end_of_turn>together",
    "  <start_of_turn>  spaced  <end_of_turn>  ",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|vision_start|><|image_pad|><|vision_end|>",
    "<<start_of_turn>> and <<|im_start|>>",
  ],
  combining: [
    "e\u0301 vs é",
    "a\u0300\u0301\u0302\u0303\u0304 stacked",
    "Z\u0351\u0363\u0364a\u0350l\u0357g\u0352o\u0367 text",
    "\u1100\u1161\u11a8 jamo vs 각",
    "n\u0303 and ñ and N\u0303",
    "\u0915\u094d\u0937 devanagari conjunct",
    "Å (U+00C5) vs Å (U+212B) vs A\u030a",
    "ﬁ ligature, ﬀ ligature, ㎏ unit, ① circled",
  ],
  control: [
    "null\u0000byte",
    "bell\u0007and escape\u001b[31mred\u001b[0m",
    "delete\u007fchar",
    "zero\u200bwidth\u200cnon\u200djoiner",
    "bidi \u202eoverride\u202c and \u200fmark",
    "soft\u00adhyphen",
    "\u0001\u0002\u0003\u0004\u0005",
    "replacement \ufffd char",
    "private use \ue000\uf8ff and plane 15 \u{f0000}",
    "noncharacter \ufdd0 and \uffff",
  ],
};

function longLines(random) {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  let word = "";
  for (let i = 0; i < 3000; ++i) word += letters[Math.floor(random() * letters.length)];
  return [
    "a".repeat(5000),
    word,
    "Supercalifragilisticexpialidocious".repeat(50),
    "https://example.com/" + "path/segment-".repeat(80) + "?q=" + "x".repeat(200),
    "QmFzZTY0IGVuY29kZWQgdGV4dA==".repeat(60),
    "漢".repeat(2000),
    "😀".repeat(500),
    " ".repeat(3000),
    "\n".repeat(500),
    "ab ".repeat(2000),
  ];
}

function mixtures(random, count) {
  const fragments = Object.values(scripts).flat().filter((text) => text.length > 0);
  const separators = [" ", "", "\n", "\t", "  ", " \n", ". ", ", "];
  const lines = [];
  for (let i = 0; i < count; ++i) {
    const parts = 1 + Math.floor(random() * 4);
    let line = "";
    for (let p = 0; p < parts; ++p) {
      let fragment = fragments[Math.floor(random() * fragments.length)];
      // Cut fragments at code point boundaries so mixtures also start and end mid-sentence.
      const points = Array.from(fragment);
      const start = Math.floor(random() * points.length * 0.5);
      const end = start + 1 + Math.floor(random() * (points.length - start));
      fragment = points.slice(start, end).join("");
      line += (p > 0 ? separators[Math.floor(random() * separators.length)] : "") + fragment;
    }
    lines.push(line);
  }
  return lines;
}

const random = generator(0x5eed);
const lines = [...Object.values(scripts).flat(), ...longLines(random)];
lines.push(...mixtures(random, 600 - lines.length));
const text = lines.map((line) => JSON.stringify(line)).join("\n") + "\n";
if (checkOnly) {
  if (readFileSync(outPath, "utf8") !== text) {
    console.error(`${outPath} differs from what tests/peers/tokenizer_corpus.mjs generates; run it and commit`);
    process.exit(1);
  }
  console.log(`${outPath}: ${lines.length} lines, up to date`);
} else {
  writeFileSync(outPath, text);
  console.log(`wrote ${lines.length} lines to ${outPath}`);
}
