// /v1/embeddings through the official openai npm client (node embeddings.mjs HTTP_ADDRESS MODEL): the client asks
// for base64 by default and decodes it, so its vectors must equal the float answer's; each is of unit length; the
// `dimensions` answer is the full one's first values renormalized (last-token pooling, then truncation, then the L2
// norm); one input answers alike alone and in a batch; the variant in the model id changes the hidden states; a
// parameter the route does not have is a 400 naming it.
import OpenAI from "openai";

const [httpAddress, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-embeddings] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => (a.length === b.length ? Math.max(...a.map((x, i) => Math.abs(x - b[i]))) : Infinity);
// Two computations of one input agree to float32 rounding, not bit for bit: where a row sits in a step's matrices
// (which other prompts share the step, which the scheduler decides) changes the order of float additions (7e-7 seen
// between the same input twice in one call). A decoding or pooling error is orders of magnitude larger.
const kSameInput = 1e-5;

async function main() {
  const inputs = ["The quick brown fox", "jumps over the lazy dog", "The quick brown fox"];
  const decoded = await client.embeddings.create({ model, input: inputs });  // base64 on the wire, decoded by the client
  const floats = await client.embeddings.create({ model, input: inputs, encoding_format: "float" });
  check("one embedding per input, in order", decoded.data.length === 3 && decoded.data.every((d, i) => d.index === i && d.object === "embedding"),
    JSON.stringify(decoded.data.map((d) => d.index)));
  check("base64 decodes to the float answer", decoded.data.every((d, i) => maxDiff(d.embedding, floats.data[i].embedding) < kSameInput),
    `${decoded.data[0].embedding.slice(0, 3)} vs ${floats.data[0].embedding.slice(0, 3)}`);
  const width = floats.data[0].embedding.length;
  check("every vector has the model's width and unit length", width > 0 && floats.data.every((d) => d.embedding.length === width &&
    Math.abs(norm(d.embedding) - 1) < 1e-5), floats.data.map((d) => norm(d.embedding)).join(","));
  check("the same input, the same vector", maxDiff(floats.data[0].embedding, floats.data[2].embedding) < kSameInput,
    maxDiff(floats.data[0].embedding, floats.data[2].embedding));
  check("different inputs, different vectors", maxDiff(floats.data[0].embedding, floats.data[1].embedding) > 1e-3);
  check("usage counts the inputs' tokens", floats.usage.prompt_tokens > 3 && floats.usage.total_tokens === floats.usage.prompt_tokens,
    JSON.stringify(floats.usage));
  const alone = await client.embeddings.create({ model, input: inputs[1], encoding_format: "float" });
  check("an input alone answers as in a batch", maxDiff(alone.data[0].embedding, floats.data[1].embedding) < kSameInput,
    maxDiff(alone.data[0].embedding, floats.data[1].embedding));

  const dims = 8;
  const short = await client.embeddings.create({ model, input: inputs[0], dimensions: dims, encoding_format: "float" });
  const head = floats.data[0].embedding.slice(0, dims);
  const renormalized = head.map((x) => x / norm(head));
  check("dimensions keeps the first values, renormalized", short.data[0].embedding.length === dims &&
    maxDiff(short.data[0].embedding, renormalized) < kSameInput, `${short.data[0].embedding} vs ${renormalized}`);

  const { data: arach, response } = await client.embeddings.create({ model: `${model}:arach`, input: inputs[0], encoding_format: "float" })
    .withResponse();
  check("the variant in the model id serves it", response.headers.get("x-arach-variant") === "arach", response.headers.get("x-arach-variant"));
  check("ARACH changes the hidden state", maxDiff(arach.data[0].embedding, floats.data[0].embedding) > 1e-4);

  try {
    await client.embeddings.create({ model, input: "x", max_tokens: 5 });
    check("max_tokens is refused", false, "answered");
  } catch (e) {
    check("max_tokens is refused naming it", e.status === 400 && e.param === "max_tokens", `${e.status} ${e.param} ${e.message}`);
  }
  try {
    await client.embeddings.create({ model, input: "x", dimensions: 100000 });
    check("too many dimensions are refused", false, "answered");
  } catch (e) {
    check("too many dimensions are refused naming them", e.status === 400 && e.param === "dimensions", `${e.status} ${e.param}`);
  }
  if (failures > 0) {
    console.log(`[openai-embeddings] ${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("[openai-embeddings] all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
