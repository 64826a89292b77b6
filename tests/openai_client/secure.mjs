// The official openai npm client against a closed arach-server: HTTPS (the test CA trusted through
// NODE_EXTRA_CA_CERTS) and API keys (node secure.mjs HTTPS_ADDRESS MODEL KEY TIGHT_KEY, TIGHT_KEY with rpm=1). A valid key completes, streamed
// and not, and reads the rate-limit headers; a wrong key is the client's AuthenticationError; a key over its
// requests per minute is the client's RateLimitError. Prints one line per check and exits 1 when any fails.
import OpenAI from "openai";

const [address, model, key, tightKey] = process.argv.slice(2);
const baseURL = `https://${address}/v1`;
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-client] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

async function main() {
  const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
  const { data, response } = await client.completions.create({ model, prompt: "Hello", max_tokens: 4 }).withResponse();
  check("https + key: a completion", data.choices.length === 1 && typeof data.choices[0].text === "string");
  check("https + key: x-ratelimit-limit-requests", response.headers.get("x-ratelimit-limit-requests") === "1000",
    response.headers.get("x-ratelimit-limit-requests"));
  let streamed = "";
  for await (const chunk of await client.completions.create({ model, prompt: "Hello", max_tokens: 4, stream: true })) {
    streamed += chunk.choices[0]?.text ?? "";
  }
  check("https + key: a streamed completion", typeof streamed === "string");

  const tight = new OpenAI({ baseURL, apiKey: tightKey, maxRetries: 0 });
  await tight.completions.create({ model, prompt: "Hello", max_tokens: 1 });
  try {
    await tight.completions.create({ model, prompt: "Hello", max_tokens: 1 });
    check("a key over its rpm is refused", false, "it was served");
  } catch (e) {
    check("a key over its rpm is the client's RateLimitError with Retry-After",
      e instanceof OpenAI.RateLimitError && e.status === 429 && Number(e.headers?.["retry-after"]) > 0,
      `${e.constructor.name} ${e.status} retry-after=${e.headers?.["retry-after"]}`);
  }

  try {
    await new OpenAI({ baseURL, apiKey: "sk-wrong", maxRetries: 0 }).completions.create({ model, prompt: "Hello", max_tokens: 1 });
    check("a wrong key is refused", false, "it was served");
  } catch (e) {
    check("a wrong key is the client's AuthenticationError", e instanceof OpenAI.AuthenticationError && e.status === 401,
      `${e.constructor.name} ${e.status}`);
  }
}

main()
  .catch((e) => {
    console.log(`[openai-client] FAIL unexpected error: ${e}`);
    failures += 1;
  })
  .then(() => process.exit(failures > 0 ? 1 : 0));
