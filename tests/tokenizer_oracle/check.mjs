// Compares `arach-run tokenize` / `detokenize` with the reference tokenizers pipeline (@huggingface/tokenizers,
// whose ids equal Python `tokenizers` on the fixtures) for one tokenizer folder, on texts this project's
// tests were not written against: seeded random mixtures of scripts, whitespace, digits, punctuation, emoji,
// special-token strings and byte-fallback characters, plus ../shared/fixtures/tokenizers/texts.json when
// present.
//   node check.mjs ARACH_RUN TOKENIZER_DIR [FIXTURE_TEXTS_JSON]
// Prints the number of texts and mismatches; exits 1 on any mismatch.
import { Tokenizer } from "@huggingface/tokenizers";
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const [, , arachRun, dir, fixtureTexts] = process.argv;
const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
const configFile = `${dir}/tokenizer_config.json`;
const reference = new Tokenizer(readJson(`${dir}/tokenizer.json`), fs.existsSync(configFile) ? readJson(configFile) : {});

// A small seeded generator (mulberry32), so every run checks the same texts.
let state = 0x5eed1234;
const random = () => {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (list) => list[Math.floor(random() * list.length)];
const fragments = [
  "the", " quick", " brown", "Fox", "JUMPS", "over", "lazy", " dog", "don't", "I'M", "they'll", "we've",
  "0", "12", "345", "6789", "3.14", "1,000", "2026-12-01", "0xFF", "$9.99", "50%", "a+b=c", "x**2",
  " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2003",
  "!", "?", "...", "—", "–", "«", "»", "“", "”", "’", "(", ")", "[", "]", "{", "}", "<", ">", "/", "\\", "|", "@", "#", "_",
  "café", "naïve", "Ångström", "ﬁ", "Ⅻ", "①", "²", "e\u0301", "ß", "İstanbul", "ΣΑΣ", "ς",
  "Привет", " мир", "こんにちは", "世界", "한국어", "مرحبا", "שלום", "हिन्दी", "ไทย", "ქართული", "Ελληνικά", "Tiếng Việt",
  "😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🤗", "∑", "∞", "≠", "→", "★", "\u{10348}", "\u{1F9EA}",
  "<s>", "</s>", "<unk>", "<bos>", "<eos>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>",
  "<start_of_turn>", "<end_of_turn>", "<pad>", "<mask>", "[INST]", "<0x41>", "▁", "Ġ", "Ċ",
  "def f(x):\n    return x", "if (a && b) { c(); }", "SELECT * FROM t;", "<div class=\"x\">", "https://example.com/a?b=c",
];
const texts = [];
for (let i = 0; i < 400; ++i) {
  let text = "";
  const parts = 1 + Math.floor(random() * 12);
  for (let p = 0; p < parts; ++p) text += pick(fragments);
  texts.push(text);
}
if (fixtureTexts && fs.existsSync(fixtureTexts)) texts.push(...readJson(fixtureTexts));

const run = (args, lines) => {
  const result = spawnSync(arachRun, args, { input: lines.join("\n") + "\n", maxBuffer: 1 << 28, encoding: "utf8" });
  if (result.status !== 0) {
    console.error(`arach-run ${args.join(" ")} failed: ${result.stderr}`);
    process.exit(1);
  }
  return result.stdout.trimEnd().split("\n").map((line) => JSON.parse(line));
};
const input = texts.map((t) => JSON.stringify(t));
const ours = run(["tokenize", `--model=${dir}`], input);
const oursSpecial = run(["tokenize", `--model=${dir}`, "--add_special_tokens"], input);
const expected = texts.map((t) => reference.encode(t, { add_special_tokens: false }).ids);
const oursDecoded = run(["detokenize", `--model=${dir}`], expected.map((ids) => JSON.stringify(ids)));

let mismatches = 0;
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
texts.forEach((text, i) => {
  const special = reference.encode(text).ids;
  const decoded = expected[i].length ? reference.decode(expected[i], { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "";
  const problems = [];
  if (!same(ours[i], expected[i])) problems.push(`ids ${JSON.stringify(ours[i])} want ${JSON.stringify(expected[i])}`);
  if (!same(oursSpecial[i], special)) problems.push(`with_special ${JSON.stringify(oursSpecial[i])} want ${JSON.stringify(special)}`);
  if (oursDecoded[i] !== decoded) problems.push(`decoded ${JSON.stringify(oursDecoded[i])} want ${JSON.stringify(decoded)}`);
  if (problems.length && ++mismatches <= 5) console.log(`MISMATCH ${JSON.stringify(text)}\n  ${problems.join("\n  ")}`);
});
console.log(`${dir}: ${texts.length} texts, ${mismatches} mismatches`);
process.exit(mismatches ? 1 : 0);
