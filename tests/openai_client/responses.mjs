// The official openai npm client's Responses API against arach-server's /v1/responses (node responses.mjs
// HTTP_ADDRESS MODEL TOOLS): responses.create answers what chat.completions.create answers for the same
// conversation (greedy); the client's stream helper (responses.stream) accepts every event and its final
// response equals the events' text; text.format json_schema gives JSON that the client parses (Ajv as the
// oracle); with TOOLS "tools" (a build with xgrammar) a required function call comes back as a function_call
// item, and the calls with their outputs go back as input for the next turn, as an agent loop sends them;
// include message.output_text.logprobs gives the message's tokens with their log-probs, whole and streamed.
import Ajv2020 from "ajv/dist/2020.js";
import OpenAI from "openai";

const [httpAddress, model, toolsMode] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
const ajv = new Ajv2020({ strict: false, allErrors: true });
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-responses] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const noThinking = { chat_template_kwargs: { enable_thinking: false } };

// The text of a response's messages (the stream helper's final response has no output_text in this client).
function outputText(response) {
  return response.output.filter((item) => item.type === "message")
    .flatMap((item) => item.content.filter((part) => part.type === "output_text").map((part) => part.text)).join("");
}

async function sameAsChat() {
  const response = await client.responses.create({ model, instructions: "Answer briefly.", input: "Name a colour.",
    max_output_tokens: 16, temperature: 0, ...noThinking });
  const chat = await client.chat.completions.create({ model, messages: [{ role: "system", content: "Answer briefly." },
    { role: "user", content: "Name a colour." }], max_tokens: 16, temperature: 0, ...noThinking });
  check("output_text equals the chat answer", response.output_text === chat.choices[0].message.content,
    `${JSON.stringify(response.output_text)} vs ${JSON.stringify(chat.choices[0].message.content)}`);
  check("usage as the Responses API counts it", response.usage.input_tokens === chat.usage.prompt_tokens &&
    response.usage.output_tokens === chat.usage.completion_tokens && response.usage.output_tokens_details.reasoning_tokens === 0,
    JSON.stringify(response.usage));
  check("status follows the finish", response.status === (chat.choices[0].finish_reason === "length" ? "incomplete" : "completed"),
    `${response.status} / ${chat.choices[0].finish_reason}`);
}

async function logprobs() {
  const params = { model, input: "Name a colour.", max_output_tokens: 12, temperature: 0, include: ["message.output_text.logprobs"],
    top_logprobs: 2, ...noThinking };
  const response = await client.responses.create(params);
  const part = response.output.find((item) => item.type === "message").content[0];
  check("include message.output_text.logprobs gives the message's tokens", part.logprobs.length > 0 &&
    part.logprobs.map((entry) => entry.token).join("") === part.text &&
    part.logprobs.every((entry) => typeof entry.logprob === "number" && entry.top_logprobs.length === 2), JSON.stringify(part));
  let streamed = [];
  const stream = client.responses.stream(params);
  stream.on("response.output_text.delta", (event) => { streamed = streamed.concat(event.logprobs); });
  await stream.finalResponse();
  check("the stream's deltas carry the same log-probs", JSON.stringify(streamed) === JSON.stringify(part.logprobs),
    `${streamed.length} vs ${part.logprobs.length}`);
}

async function streamHelper() {
  const params = { model, input: [{ role: "user", content: "Tell me something." }], max_output_tokens: 24, temperature: 1, seed: 11,
    ...noThinking };
  const stream = client.responses.stream(params);
  let deltas = "";
  const types = [];
  stream.on("response.output_text.delta", (event) => { deltas += event.delta; });
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  check("the stream helper reads every event to a final response", types[0] === "response.created" &&
    ["response.completed", "response.incomplete"].includes(types.at(-1)) && outputText(final) === deltas && deltas.length > 0,
    JSON.stringify(types));
  const whole = await client.responses.create(params);
  check("the stream says what the whole answer says (seeded)", whole.output_text === outputText(final),
    `${JSON.stringify(whole.output_text)} vs ${JSON.stringify(outputText(final))}`);
}

async function jsonSchema() {
  const schema = { type: "object", properties: { colour: { type: "string", maxLength: 12 }, count: { type: "integer", minimum: 0, maximum: 9 } },
    required: ["colour", "count"], additionalProperties: false };
  const validate = ajv.compile(schema);
  const bad = [];
  for (let seed = 1; seed <= 3; ++seed) {
    const response = await client.responses.create({ model, input: "Describe a thing as JSON.", max_output_tokens: 80, temperature: 1, seed,
      text: { format: { type: "json_schema", name: "thing", schema, strict: true } }, ...noThinking });
    let parsed;
    try {
      parsed = JSON.parse(response.output_text);
    } catch {
      bad.push(`seed ${seed}: not JSON ${JSON.stringify(response.output_text)}`);
      continue;
    }
    if (!validate(parsed)) bad.push(`seed ${seed}: ${ajv.errorsText(validate.errors)}`);
  }
  check("text.format json_schema gives JSON valid under the schema", bad.length === 0, bad.join(" | "));
}

async function toolLoop() {
  const tools = [{ type: "function", name: "get_weather", description: "Weather in a city", strict: true,
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } }, required: ["city"], additionalProperties: false } }];
  const validate = ajv.compile(tools[0].parameters);
  const input = [{ role: "user", content: "What is the weather in Paris?" }];
  const first = await client.responses.create({ model, input, tools, tool_choice: "required", parallel_tool_calls: false,
    max_output_tokens: 60, temperature: 1, seed: 5, ...noThinking });
  const calls = first.output.filter((item) => item.type === "function_call");
  const argsOk = calls.every((call) => {
    try {
      return call.name === "get_weather" && validate(JSON.parse(call.arguments)) && /^call_[0-9a-f]{24}$/.test(call.call_id);
    } catch {
      return false;
    }
  });
  check("a required call comes back as a function_call item", calls.length === 1 && argsOk, JSON.stringify(first.output));
  if (calls.length === 0) return;
  const next = [...input, ...first.output, ...calls.map((call) => ({ type: "function_call_output", call_id: call.call_id, output: "Sunny" }))];
  const second = await client.responses.create({ model, input: next, tools, max_output_tokens: 16, temperature: 0, ...noThinking });
  check("the calls and their outputs go back as input", second.status !== "failed" && second.usage.input_tokens > first.usage.input_tokens,
    JSON.stringify(second.usage));
  const stream = client.responses.stream({ model, input, tools, tool_choice: "required", parallel_tool_calls: false,
    max_output_tokens: 60, temperature: 1, seed: 5, ...noThinking });
  let argumentDeltas = "";
  stream.on("response.function_call_arguments.delta", (event) => { argumentDeltas += event.delta; });
  const streamed = await stream.finalResponse();
  const streamedCalls = streamed.output.filter((item) => item.type === "function_call");
  check("a streamed call assembles to the unstreamed one", streamedCalls.length === 1 && streamedCalls[0].arguments === calls[0].arguments &&
    argumentDeltas === calls[0].arguments, `${argumentDeltas} vs ${calls[0].arguments}`);
}

async function errors() {
  try {
    await client.responses.create({ model, input: "x", previous_response_id: "resp_123" });
    check("previous_response_id is refused", false, "no error");
  } catch (error) {
    check("previous_response_id is refused with 400 naming it", error.status === 400 && error.param === "previous_response_id",
      `${error.status} ${error.param} ${error.message}`);
  }
}

await sameAsChat();
await streamHelper();
await logprobs();
await jsonSchema().catch((error) => check("text.format json_schema", toolsMode !== "tools" && /structured output/.test(error.message),
  error.message));
if (toolsMode === "tools") await toolLoop();
await errors();
if (failures > 0) {
  console.log(`[openai-responses] ${failures} check(s) failed`);
  process.exit(1);
}
