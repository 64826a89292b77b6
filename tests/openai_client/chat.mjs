// The official openai npm client against arach-server's /v1/chat/completions on a model served with a real
// chat template (node chat.mjs HTTP_ADDRESS GRPC_ADDRESS ARACH_CLI MODEL CASES_JSON): the prompt the engine saw
// equals the template's reference rendering (fixtures/chat/cases.json), the answer equals gRPC Generate on that
// prompt, streamed and not; chat_template_kwargs, log-probs, the end-of-turn stop and errors.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [httpAddress, grpcAddress, cli, model, casesFile] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
const fixture = JSON.parse(readFileSync(casesFile, "utf8"));
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-chat] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}
function reference(conversation, extra = null) {
  return fixture.cases.find((c) => c.template === "qwen3" && c.conversation === conversation && c.add_generation_prompt &&
    JSON.stringify(c.extra) === JSON.stringify(extra)).text;
}
function grpcGenerate(prompt, maxTokens) {
  const out = execFileSync(cli, ["generate", `--server=${grpcAddress}`, `--prompt=${prompt}`, `--max_tokens=${maxTokens}`,
    "--temperature=0", "--json"], { encoding: "utf8" });
  return out.trim().split("\n").map((line) => JSON.parse(line).text ?? "").join("");
}

async function main() {
  const messages = fixture.conversations.system_user.messages;
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, return_prompt: true });
  const prompt = whole.arach_prompt;
  check("the engine's prompt is the template's reference rendering", prompt === reference("system_user"), JSON.stringify(prompt));
  const expected = grpcGenerate(prompt, 12);
  const content = whole.choices[0].message.content;
  check("the answer equals gRPC Generate on that prompt", content === expected, `${JSON.stringify(content)} vs ${JSON.stringify(expected)}`);
  check("chat.completion shape", whole.object === "chat.completion" && whole.choices[0].message.role === "assistant" &&
    whole.usage.completion_tokens > 0);

  const stream = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let text = "";
  let role = null;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta.role) role = choice.delta.role;
      text += choice.delta.content ?? "";
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  check("streamed deltas equal the answer", text === content && role === "assistant" && finish !== null && usage !== null,
    JSON.stringify({ text, role, finish }));

  const tools = fixture.conversations.tools;
  const withTools = await client.chat.completions.create({ model, messages: tools.messages, tools: tools.tools, max_tokens: 1,
    return_prompt: true });
  check("tools render as the template writes them", withTools.arach_prompt === reference("tools"));

  const noThinking = await client.chat.completions.create({ model, messages, max_tokens: 1, return_prompt: true,
    chat_template_kwargs: { enable_thinking: false } });
  check("chat_template_kwargs reach the template", noThinking.arach_prompt === reference("system_user", { enable_thinking: false }));

  const withLogprobs = await client.chat.completions.create({ model, messages, max_tokens: 5, temperature: 0, logprobs: true,
    top_logprobs: 2 });
  const lp = withLogprobs.choices[0].logprobs.content;
  check("chat logprobs: one entry per token, two alternatives each, tokens join to the content",
    lp.length === withLogprobs.usage.completion_tokens && lp.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0) &&
    lp.map((t) => t.token).join("") === withLogprobs.choices[0].message.content, JSON.stringify(lp));

  const endOfTurn = await client.chat.completions.create({ model, messages, max_tokens: 20, logit_bias: { "151645": 100 } });
  check("generation stops at the end-of-turn token", endOfTurn.choices[0].finish_reason === "stop" &&
    endOfTurn.usage.completion_tokens === 1 && endOfTurn.choices[0].message.content === "", JSON.stringify(endOfTurn.choices[0]));

  try {
    await client.chat.completions.create({ model, messages: [{ role: "robot", content: "hi" }] });
    check("a bad role is a BadRequestError", false, "no error");
  } catch (e) {
    check("a bad role is a BadRequestError naming messages[0].role", e instanceof OpenAI.BadRequestError &&
      e.param === "messages[0].role", `${e.constructor.name} ${e.param}`);
  }
}

main().then(() => process.exit(failures === 0 ? 0 : 1), (e) => {
  console.error(`[openai-chat] FAIL ${e.stack ?? e}`);
  process.exit(1);
});
