// The official openai npm client against arach-server's /v1 (node check.mjs HTTP_ADDRESS GRPC_ADDRESS ARACH_CLI MODEL):
// the same completions the gRPC API gives (greedy text equal to Generate, echo scoring equal to Score within
// 1e-4), streamed and not, n choices with seeds, log-probs, and errors the client raises as their types.
// Prints one line per check and exits 1 when any fails.
import { execFileSync } from "node:child_process";
import OpenAI from "openai";

const [httpAddress, grpcAddress, cli, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
const prompt = "The quick brown fox jumps over the lazy dog. Once upon a time";
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-client] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

// The gRPC API's answers, through arach-cli --json.
function grpcGenerate(variant, maxTokens) {
  const out = execFileSync(cli, ["generate", `--server=${grpcAddress}`, `--prompt=${prompt}`, `--variant=${variant}`,
    `--max_tokens=${maxTokens}`, "--temperature=0", "--json"], { encoding: "utf8" });
  return out.trim().split("\n").map((line) => JSON.parse(line).text ?? "").join("");
}
function grpcScore(variant) {
  const out = execFileSync(cli, ["score", `--server=${grpcAddress}`, `--text=${prompt}`, `--variant=${variant}`, "--json"],
    { encoding: "utf8" });
  return JSON.parse(out).results[0].logprobs;
}

async function main() {
  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check("models.list has NAME and NAME:arach", ids.includes(model) && ids.includes(`${model}:arach`), ids.join(","));
  const retrieved = await client.models.retrieve(`${model}:arach`);
  check("models.retrieve returns the listed object", JSON.stringify(retrieved) === JSON.stringify(models.data[ids.indexOf(`${model}:arach`)]),
    JSON.stringify(retrieved));

  for (const variant of ["base", "arach"]) {
    const expected = grpcGenerate(variant, 20);
    const whole = await client.completions.create({ model: `${model}:${variant}`, prompt, max_tokens: 20, temperature: 0 });
    check(`${variant}: greedy text equals gRPC Generate`, whole.choices[0].text === expected,
      `${JSON.stringify(whole.choices[0].text)} vs ${JSON.stringify(expected)}`);
    check(`${variant}: arach_variant says the variant`, whole.arach_variant === variant, whole.arach_variant);

    const stream = await client.completions.create({
      model: `${model}:${variant}`, prompt, max_tokens: 20, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let chunks = 0;
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      chunks += 1;
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        text += choice.text;
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    check(`${variant}: streamed text equals gRPC Generate`, text === expected, `${JSON.stringify(text)} vs ${JSON.stringify(expected)}`);
    check(`${variant}: stream ends with usage and a finish reason`, chunks > 2 && usage !== null && finish !== null &&
      usage.completion_tokens === whole.usage.completion_tokens, JSON.stringify({ chunks, usage, finish }));
  }

  const seeded = { model, prompt, max_tokens: 12, temperature: 1.0, n: 2, seed: 1234 };
  const first = await client.completions.create(seeded);
  const again = await client.completions.create(seeded);
  check("n: 2 gives two choices", first.choices.length === 2 && first.choices.every((c, i) => c.index === i));
  check("seeded choices repeat", first.choices.every((c, i) => c.text === again.choices[i].text));

  const withLogprobs = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0, logprobs: 3 });
  const lp = withLogprobs.choices[0].logprobs;
  check("logprobs: one entry per token, pieces join to the text, 3+ alternatives",
    lp.tokens.length === withLogprobs.usage.completion_tokens && lp.tokens.join("") === withLogprobs.choices[0].text &&
    lp.top_logprobs.every((top) => Object.keys(top).length >= 3) && lp.token_logprobs.every((x) => x <= 0),
    JSON.stringify(lp));

  const reference = grpcScore("arach");
  const scored = await client.completions.create({ model: `${model}:arach`, prompt, max_tokens: 0, echo: true, logprobs: 0 });
  const tokenLogprobs = scored.choices[0].logprobs.token_logprobs;
  const worst = reference.reduce((m, x, i) => Math.max(m, Math.abs(x - tokenLogprobs[i + 1])), 0);
  check("echo scoring equals gRPC Score within 1e-4", tokenLogprobs[0] === null && tokenLogprobs.length === reference.length + 1 &&
    worst <= 1e-4, `max difference ${worst}, ${tokenLogprobs.length} vs ${reference.length + 1}`);
  check("echo returns the prompt as the text", scored.choices[0].text === prompt);

  // Streamed echo with logprobs: the first chunk is the prompt and its log-probs, then the first token's; the whole
  // stream equals the answer's.
  const echoed = { model: `${model}:arach`, prompt, max_tokens: 3, temperature: 0, echo: true, logprobs: 1 };
  const echoedWhole = await client.completions.create(echoed);
  const echoedStream = await client.completions.create({ ...echoed, stream: true });
  let echoedText = "";
  const echoedLogprobs = [];
  let firstEntries = -1;
  for await (const chunk of echoedStream) {
    for (const choice of chunk.choices) {
      echoedText += choice.text;
      if (!choice.logprobs) continue;
      if (firstEntries < 0) firstEntries = choice.logprobs.token_logprobs.length;
      echoedLogprobs.push(...choice.logprobs.token_logprobs);
    }
  }
  const wholeLogprobs = echoedWhole.choices[0].logprobs.token_logprobs;
  const apart = wholeLogprobs.reduce((m, x, i) => (x === null ? m : Math.max(m, Math.abs(x - echoedLogprobs[i]))), 0);
  check("streamed echo with logprobs: the prompt first, then the tokens, as the whole answer",
    echoedText === echoedWhole.choices[0].text && echoedText.startsWith(prompt) && echoedLogprobs[0] === null &&
    echoedLogprobs.length === wholeLogprobs.length && firstEntries === reference.length + 2 && apart <= 1e-5,
    JSON.stringify({ echoedText, firstEntries, entries: echoedLogprobs.length, whole: wholeLogprobs.length, apart }));

  try {
    await client.completions.create({ model, prompt, temperature: -1 });
    check("a bad temperature is a BadRequestError", false, "no error");
  } catch (e) {
    check("a bad temperature is a BadRequestError naming it", e instanceof OpenAI.BadRequestError && e.status === 400 &&
      e.param === "temperature", `${e.constructor.name} ${e.status} ${e.param}`);
  }
  try {
    await client.completions.create({ model: "no-such-model", prompt });
    check("an unknown model is a NotFoundError", false, "no error");
  } catch (e) {
    check("an unknown model is a NotFoundError", e instanceof OpenAI.NotFoundError && e.code === "model_not_found",
      `${e.constructor.name} ${e.code}`);
  }
}

main().then(() => process.exit(failures === 0 ? 0 : 1), (e) => {
  console.error(`[openai-client] FAIL ${e.stack ?? e}`);
  process.exit(1);
});
