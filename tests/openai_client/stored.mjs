// Stored responses through the official openai npm client (node stored.mjs HTTP_ADDRESS MODEL), against a server
// run with --responses_store_bytes: responses.create keeps the answer, responses.retrieve returns it,
// previous_response_id continues it, responses.inputItems.list pages through a response's own input items with the
// client's cursor paginator (limit, after, has_more), and responses.del drops it.
import OpenAI from "openai";

const [httpAddress, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
const noThinking = { chat_template_kwargs: { enable_thinking: false } };
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-stored] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const input = [
  { role: "user", content: "Name a colour." },
  { role: "assistant", content: "Red." },
  { role: "user", content: "Another one?" },
];
const first = await client.responses.create({ model, input, max_output_tokens: 8, temperature: 0, ...noThinking });
check("the answer says it is stored", first.store === true, JSON.stringify(first.store));
const retrieved = await client.responses.retrieve(first.id);
const { output_text: _added, ...answered } = first;  // create adds the text for convenience; retrieve does not
check("retrieve returns it as answered", JSON.stringify(retrieved) === JSON.stringify(answered),
  `${JSON.stringify(retrieved)} vs ${JSON.stringify(answered)}`);

const seen = [];
for await (const item of client.responses.inputItems.list(first.id, { limit: 1, order: "asc" })) seen.push(item);
check("the paginator walks every input item, one per page, in order",
  seen.length === 3 && seen.map((item) => item.content[0].text).join("|") === "Name a colour.|Red.|Another one?",
  JSON.stringify(seen));
check("each has an id of its own", new Set(seen.map((item) => item.id)).size === 3 && seen.every((item) => item.id.startsWith("msg_")));
const newestFirst = await client.responses.inputItems.list(first.id);
check("the default order is the newest first", newestFirst.data[0].content[0].text === "Another one?" && newestFirst.has_more === false,
  JSON.stringify(newestFirst.data));

const second = await client.responses.create({ model, previous_response_id: first.id, input: "And a third?", max_output_tokens: 8,
  temperature: 0, ...noThinking });
check("previous_response_id continues it", second.previous_response_id === first.id);
const secondItems = await client.responses.inputItems.list(second.id);
check("a continued response lists its own input only", secondItems.data.length === 1 && secondItems.data[0].content[0].text === "And a third?",
  JSON.stringify(secondItems.data));

await client.responses.del(first.id);  // (this client version's name for delete)
try {
  await client.responses.retrieve(first.id);
  check("a deleted response is gone", false, "retrieved");
} catch (error) {
  check("a deleted response is gone (404)", error.status === 404, `${error.status} ${error.message}`);
}
if (failures > 0) {
  console.log(`[openai-stored] ${failures} check(s) failed`);
  process.exit(1);
}
