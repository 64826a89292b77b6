// The OpenAI Agents SDK (@openai/agents, whose OpenAI models speak the Responses API) running agents on
// arach-server's /v1/responses (node agents.mjs HTTP_ADDRESS MODEL): an agent whose first turn must call its
// function tool runs the tool with the arguments the model wrote (valid under the tool's zod schema: the SDK
// parses them) and sends the result back for a second turn, streamed and not; an agent with an output type gets
// a final output that the SDK parses with its zod schema (text.format json_schema). Seeded: the same run each time.
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

const [httpAddress, model] = process.argv.slice(2);
setTracingDisabled(true);
const runner = new Runner({ modelProvider: new OpenAIProvider({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", useResponses: true }) });
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-agents] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const providerData = { chat_template_kwargs: { enable_thinking: false }, seed: 2 };

async function toolLoop(stream) {
  const cities = [];
  const getWeather = tool({ name: "get_weather", description: "Weather in a city", parameters: z.object({ city: z.string().max(10) }),
    execute: async ({ city }) => {
      cities.push(city);
      return `Sunny in ${city}`;
    } });
  const agent = new Agent({ name: "weather", instructions: "Answer with the weather tool.", model, tools: [getWeather],
    modelSettings: { toolChoice: "required", parallelToolCalls: false, temperature: 1, maxTokens: 80, providerData } });
  const result = await runner.run(agent, "Weather in Paris?", { stream, maxTurns: 2 });
  if (stream) {
    for await (const event of result.toStream()) void event;
    await result.completed;
  }
  const calls = result.newItems.filter((item) => item.type === "tool_call_item");
  const outputs = result.newItems.filter((item) => item.type === "tool_call_output_item");
  check(`${stream ? "streamed" : "whole"}: the tool ran with arguments the SDK parsed, and its output went back`,
    cities.length === 1 && calls.length === 1 && outputs.length === 1 && typeof result.finalOutput === "string" &&
    result.rawResponses.length === 2, JSON.stringify({ cities, items: result.newItems.map((item) => item.type), final: result.finalOutput }));
  return { cities, final: result.finalOutput };
}

async function outputType() {
  const agent = new Agent({ name: "city", instructions: "Describe a city.", model,
    outputType: z.object({ name: z.string().max(12), population: z.number().int().min(0).max(99999) }),
    modelSettings: { temperature: 1, maxTokens: 120, providerData } });
  const result = await runner.run(agent, "Paris");
  const out = result.finalOutput;
  check("an output type comes back parsed by its zod schema", out !== undefined && typeof out.name === "string" &&
    Number.isInteger(out.population), JSON.stringify(out));
}

try {
  const whole = await toolLoop(false);
  const streamed = await toolLoop(true);
  check("streamed and whole runs agree (seeded)", JSON.stringify(whole) === JSON.stringify(streamed),
    `${JSON.stringify(whole)} vs ${JSON.stringify(streamed)}`);
  await outputType();
} catch (error) {
  check("the agents ran", false, `${error.name}: ${error.message}`);
}
if (failures > 0) {
  console.log(`[openai-agents] ${failures} check(s) failed`);
  process.exit(1);
}
