// Tool calls through the official openai npm client (node tools.mjs HTTP_ADDRESS MODEL SYNTAX): on a random-weight
// model sampled at temperature 1, `required` and a named function always come back as tool_calls whose arguments
// validate against the tool's parameters (Ajv as the oracle) with finish_reason tool_calls; streamed calls assemble
// to the unstreamed ones; `none` calls nothing (the tools in its prompt all the same; pushed to open a call, the model
// cannot: the opening token is banned); `auto` holds a call the model opens to its form (TRIGGER_TOKEN_ID,
// when given, is the token that opens a call: a logit bias makes the model open one); a tool result goes back
// through the template; the client's stream helper reads the calls. SYNTAX is the server's tool-call syntax
// (hermes, llama3_json, mistral, mistral_v11, pythonic). Call ids are 9 letters or digits for Mistral's syntaxes (its
// templates take no other), else call_ and 24 hexadecimal digits.
import Ajv2020 from "ajv/dist/2020.js";
import OpenAI from "openai";

const [httpAddress, model, syntax, triggerToken] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
const callId = syntax.startsWith("mistral") ? /^[A-Za-z0-9]{9}$/ : /^call_[0-9a-f]{24}$/;
const ajv = new Ajv2020({ strict: false, allErrors: true });
const SAMPLES = 5;
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[tools ${syntax}] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 }, unit: { enum: ["c", "f"] } },
      required: ["city", "unit"], additionalProperties: false } } },
  { type: "function", function: { name: "add", description: "Adds two integers",
    parameters: { type: "object", properties: { a: { type: "integer", minimum: -99, maximum: 99 }, b: { type: "integer", minimum: -99, maximum: 99 } },
      required: ["a", "b"], additionalProperties: false } } },
];
const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
const messages = [{ role: "user", content: "What is the weather in Paris, and what is 2 + 3?" }];
const base = { model, messages, tools, temperature: 1, max_tokens: 120, chat_template_kwargs: { enable_thinking: false } };

// Problems with the calls of one answer (empty: all parse and validate).
function callProblems(message, allowed) {
  const problems = [];
  if (!Array.isArray(message.tool_calls) || message.tool_calls.length === 0) return ["no tool_calls"];
  for (const call of message.tool_calls) {
    if (call.type !== "function" || !callId.test(call.id)) problems.push(`bad call envelope ${JSON.stringify(call)}`);
    if (!allowed.includes(call.function.name)) problems.push(`unexpected function ${call.function.name}`);
    let args;
    try {
      args = JSON.parse(call.function.arguments);
    } catch {
      problems.push(`arguments are not JSON: ${call.function.arguments}`);
      continue;
    }
    const validate = validators[call.function.name];
    if (validate && !validate(args)) problems.push(`${call.function.arguments} -> ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}

async function requiredAndNamed() {
  for (const [label, extra, allowed] of [
    ["required, one call", { tool_choice: "required", parallel_tool_calls: false }, ["get_weather", "add"]],
    ["named function", { tool_choice: { type: "function", function: { name: "add" } } }, ["add"]],
  ]) {
    const bad = [];
    for (let seed = 1; seed <= SAMPLES; ++seed) {
      const answer = await client.chat.completions.create({ ...base, ...extra, seed });
      const choice = answer.choices[0];
      const problems = callProblems(choice.message, allowed);
      if (choice.finish_reason !== "tool_calls") problems.push(`finish_reason ${choice.finish_reason}`);
      if (choice.message.tool_calls?.length !== 1) problems.push(`${choice.message.tool_calls?.length} calls`);
      if (problems.length > 0) bad.push(`seed ${seed}: ${problems.join("; ")} (${JSON.stringify(choice.message)})`);
    }
    check(`${label}: every answer is a well-formed call`, bad.length === 0, bad.join(" | "));
  }
  // Parallel calls: each call validates; the turn ends with tool_calls, or length when the model keeps calling: then
  // its last call is cut off (its arguments as far as written, as OpenAI answers) and the calls before it validate.
  const bad = [];
  for (let seed = 1; seed <= SAMPLES; ++seed) {
    const choice = (await client.chat.completions.create({ ...base, tool_choice: "required", seed })).choices[0];
    const cut = choice.finish_reason === "length";
    const complete = cut ? (choice.message.tool_calls ?? []).slice(0, -1) : choice.message.tool_calls;
    const problems = cut && complete.length === 0 ? [] : callProblems({ ...choice.message, tool_calls: complete }, ["get_weather", "add"]);
    if (choice.finish_reason !== "tool_calls" && choice.finish_reason !== "length") problems.push(`finish_reason ${choice.finish_reason}`);
    if (problems.length > 0) bad.push(`seed ${seed}: ${problems.join("; ")}`);
  }
  check("required, parallel: every call validates", bad.length === 0, bad.join(" | "));
}

async function streamedEqualsWhole() {
  for (const extra of [{ tool_choice: "required" }, { tool_choice: { type: "function", function: { name: "get_weather" } } }]) {
    const params = { ...base, ...extra, seed: 11 };
    const whole = (await client.chat.completions.create(params)).choices[0];
    const calls = [];
    let content = "";
    let finish = null;
    let pieces = 0;
    for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
      for (const c of chunk.choices) {
        content += c.delta.content ?? "";
        finish = c.finish_reason ?? finish;
        for (const delta of c.delta.tool_calls ?? []) {
          ++pieces;
          calls[delta.index] ??= { id: "", name: "", arguments: "" };
          calls[delta.index].id += delta.id ?? "";
          calls[delta.index].name += delta.function?.name ?? "";
          calls[delta.index].arguments += delta.function?.arguments ?? "";
        }
      }
    }
    const expected = (whole.message.tool_calls ?? []).map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
    const got = calls.map((c) => ({ name: c.name, arguments: c.arguments }));
    check(`streamed calls assemble to the whole answer (${JSON.stringify(extra.tool_choice)})`,
      JSON.stringify(got) === JSON.stringify(expected) && finish === whole.finish_reason && content === (whole.message.content ?? "") &&
      calls.every((c) => callId.test(c.id)), `${JSON.stringify({ got, content, finish })} vs ${JSON.stringify(whole)}`);
    // JSON calls stream as the model writes them, a pythonic list comes whole.
    if (syntax !== "pythonic") {
      check(`a call's arguments stream in pieces (${JSON.stringify(extra.tool_choice)})`, pieces > calls.length, `${pieces} deltas`);
    }
  }
  // The client's own stream helper assembles the deltas too.
  const runner = client.beta.chat.completions.stream({ ...base, tool_choice: "required", parallel_tool_calls: false, seed: 3 });
  const final = await runner.finalChatCompletion();
  check("the client's stream helper assembles the call", callProblems(final.choices[0].message, ["get_weather", "add"]).length === 0,
    JSON.stringify(final.choices[0].message));
}

async function noneAndAuto() {
  const none = await client.chat.completions.create({ ...base, tool_choice: "none", seed: 2, return_prompt: true });
  check("tool_choice none: no calls, the tools stay in the prompt (as OpenAI's and vLLM's)", !none.choices[0].message.tool_calls &&
    none.choices[0].finish_reason !== "tool_calls" && none.arach_prompt.includes("get_weather"), JSON.stringify(none.choices[0]));
  if (triggerToken !== undefined) {
    // A model pushed to open a call at once (the opening token's logit raised by 100) opens none: the token is banned.
    const opened = [];
    for (let seed = 1; seed <= SAMPLES; ++seed) {
      const choice = (await client.chat.completions.create({ ...base, tool_choice: "none", seed, max_tokens: 20,
        logit_bias: { [triggerToken]: 100 } })).choices[0];
      if (choice.message.tool_calls || choice.finish_reason === "tool_calls" || choice.message.content.includes("<tool_call>")) {
        opened.push(`seed ${seed}: ${JSON.stringify(choice.message)}`);
      }
    }
    check("tool_choice none: a model pushed to call opens no call", opened.length === 0, opened.join(" | "));
  }
  // auto: whatever the model writes, any call it makes is well-formed.
  let calls = 0;
  const bad = [];
  for (let seed = 1; seed <= SAMPLES; ++seed) {
    const choice = (await client.chat.completions.create({ ...base, tool_choice: "auto", seed, max_tokens: 60 })).choices[0];
    if (choice.message.tool_calls) {
      calls += choice.message.tool_calls.length;
      const problems = callProblems(choice.message, ["get_weather", "add"]);
      if (problems.length > 0) bad.push(problems.join("; "));
    }
  }
  check(`tool_choice auto: every call made is well-formed (${calls} calls)`, bad.length === 0, bad.join(" | "));
  if (triggerToken === undefined) return;
  // A model pushed to open a call at once: the call it opens is held to a well-formed one.
  const opened = [];
  for (let seed = 1; seed <= SAMPLES; ++seed) {
    const choice = (await client.chat.completions.create({ ...base, tool_choice: "auto", parallel_tool_calls: false, seed,
      logit_bias: { [triggerToken]: 100 } })).choices[0];
    const problems = callProblems(choice.message, ["get_weather", "add"]);
    if (choice.finish_reason !== "tool_calls") problems.push(`finish_reason ${choice.finish_reason}`);
    if (problems.length > 0) opened.push(`seed ${seed}: ${problems.join("; ")} (${JSON.stringify(choice.message)})`);
  }
  check("tool_choice auto: a call the model opens is well-formed and ends the turn", opened.length === 0, opened.join(" | "));
}

async function toolResultRoundTrip() {
  const first = (await client.chat.completions.create({ ...base, tool_choice: { type: "function", function: { name: "add" } }, seed: 4 }))
    .choices[0].message;
  const call = first.tool_calls[0];
  const followUp = await client.chat.completions.create({
    ...base, seed: 4, max_tokens: 8, return_prompt: true,
    messages: [...messages, first, { role: "tool", tool_call_id: call.id, content: "5" }],
  });
  const prompt = followUp.arach_prompt;
  const args = JSON.parse(call.function.arguments);
  // The template writes the arguments as JSON ({"a": 2, ...}), or as Python keywords in the pythonic syntax (a=2, ...).
  const written = syntax === "pythonic" ? `${Object.keys(args)[0]}=` : JSON.stringify(args).slice(1, 5);
  check("the call and its result go back through the template", prompt.includes(call.function.name) &&
    prompt.includes(written) && prompt.includes("5"), prompt);
}

async function errors() {
  try {
    await client.chat.completions.create({ ...base, tool_choice: { type: "function", function: { name: "nope" } } });
    check("an unknown named function is refused", false, "accepted");
  } catch (e) {
    check("an unknown named function is refused (400, tool_choice.function.name)", e.status === 400 && e.param === "tool_choice.function.name");
  }
}

// Beside a response format (as the OpenAI Agents SDK sends them): required makes its calls all the same; auto
// makes calls or JSON content, never free text.
async function besideAResponseFormat() {
  const required = (await client.chat.completions.create({ ...base, tool_choice: "required", parallel_tool_calls: false, seed: 2,
    response_format: { type: "json_object" } })).choices[0];
  check("required beside a response format makes its call", required.finish_reason === "tool_calls" &&
    required.message.tool_calls?.length === 1, JSON.stringify(required));
  // (A schema whose answer is short: a tiny random model writes JSON strings of any length where it may.)
  const answer = { type: "object", properties: { answer: { enum: ["yes", "no"] } }, required: ["answer"], additionalProperties: false };
  for (const seed of [1, 2]) {
    const choice = (await client.chat.completions.create({ ...base, tool_choice: "auto", parallel_tool_calls: false, seed,
      response_format: { type: "json_schema", json_schema: { name: "answer", schema: answer, strict: true } } })).choices[0];
    let json = null;
    try { json = JSON.parse(choice.message.content ?? ""); } catch { json = null; }
    const calls = choice.message.tool_calls ?? [];
    const ok = calls.length > 0 ? choice.finish_reason === "tool_calls" && calls.length === 1
      : choice.finish_reason === "stop" && (json?.answer === "yes" || json?.answer === "no");
    check(`auto beside a response format: calls or content in the format (seed ${seed})`, ok, JSON.stringify(choice));
  }
}

async function main() {
  await requiredAndNamed();
  await streamedEqualsWhole();
  await noneAndAuto();
  await toolResultRoundTrip();
  await errors();
  await besideAResponseFormat();
  if (failures > 0) {
    console.log(`[tools ${syntax}] ${failures} check(s) failed`);
    process.exit(1);
  }
  console.log(`[tools ${syntax}] all checks passed`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
