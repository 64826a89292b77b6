// Stored responses through the official openai npm client (node stored.mjs HTTP_ADDRESS MODEL), against a server
// run with --responses_store_bytes: responses.create keeps the answer, responses.retrieve returns it,
// previous_response_id continues it, responses.inputItems.list pages through a response's own input items with the
// client's cursor paginator (limit, after, has_more), and responses.del drops it. Background mode: a response created
// with background is polled with retrieve to the foreground's answer, and responses.cancel cancels a running one; one
// created with background and stream is read in part, left, and read on with retrieve's stream and starting_after.
// input_tokens counts a request's input as its response does.
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

// POST /v1/responses/input_tokens through the client's own request path (this client version has no helper for it).
const count = await client.post("/responses/input_tokens", { body: { model, input, ...noThinking } });
check("input_tokens counts what the response used", count.object === "response.input_tokens" &&
  count.input_tokens === first.usage.input_tokens, `${JSON.stringify(count)} vs ${first.usage.input_tokens}`);

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

const question = { model, input: "Name a colour.", max_output_tokens: 8, temperature: 0, ...noThinking };
const queued = await client.responses.create({ ...question, background: true });
check("a background response is answered at once, queued", queued.status === "queued" && queued.background === true,
  JSON.stringify(queued));
let polled = queued;
for (let i = 0; i < 600 && (polled.status === "queued" || polled.status === "in_progress"); i += 1) {
  await new Promise((resolve) => setTimeout(resolve, 20));
  polled = await client.responses.retrieve(queued.id);
}
const foreground = await client.responses.create({ ...question, store: false });
const textOf = (response) => response.output.filter((item) => item.type === "message").map((item) => item.content[0].text).join("");
check("polled to the answer the foreground gives", polled.status === foreground.status && textOf(polled) === textOf(foreground),
  `${polled.status} ${JSON.stringify(textOf(polled))} vs ${foreground.status} ${JSON.stringify(textOf(foreground))}`);
const long = await client.responses.create({ ...question, max_output_tokens: 4000, min_tokens: 4000, background: true });
await client.responses.cancel(long.id);  // (typed void in this client version: the state is retrieved)
const cancelled = await client.responses.retrieve(long.id);
check("responses.cancel cancels a running one", cancelled.status === "cancelled" && cancelled.background === true,
  JSON.stringify(cancelled));

// Background and stream: the client leaves after the first events (the response runs on) and reads on later from the
// last sequence number it saw; the two parts make the foreground's answer.
const streamed = await client.responses.create({ ...question, background: true, stream: true });
const firstPart = [];
for await (const event of streamed) {
  firstPart.push(event);
  if (firstPart.length === 4) break;  // (leaves the stream: the connection closes)
}
check("a streamed background response begins queued", firstPart[0].type === "response.created" &&
  firstPart[0].response.status === "queued" && firstPart[1].type === "response.queued", JSON.stringify(firstPart.slice(0, 2)));
const resumed = await client.responses.retrieve(firstPart[0].response.id, { stream: true, starting_after: firstPart[3].sequence_number });
const rest = [];
for await (const event of resumed) rest.push(event);
const events = [...firstPart, ...rest];
check("read on from starting_after, every event once in sequence", events.every((event, i) => event.sequence_number === i),
  JSON.stringify(events.map((event) => event.sequence_number)));
const deltas = events.filter((event) => event.type === "response.output_text.delta").map((event) => event.delta).join("");
const last = events[events.length - 1];
check("the two parts make the foreground's answer", last.type === `response.${foreground.status}` && deltas === textOf(foreground) &&
  textOf(last.response) === deltas, `${last.type} ${JSON.stringify(deltas)} vs ${JSON.stringify(textOf(foreground))}`);

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
