// Structured output through the official openai npm client (node structured.mjs HTTP_ADDRESS MODEL): a suite of
// JSON Schemas (nested objects, $defs/$ref with recursion, anyOf/oneOf, enum/const, bounded arrays and strings,
// patterns, integer ranges, additionalProperties false, Unicode) sampled at temperature 1 from a random-weight
// model, so that only the mask makes the output valid; every answer that finishes with `stop` must validate under
// Ajv (the oracle). The same for regexes, choices and an EBNF grammar on /v1/completions, the client's
// structured-output helper (beta.chat.completions.parse), streamed answers, and the errors.
import Ajv2020 from "ajv/dist/2020.js";
import OpenAI from "openai";

const [httpAddress, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
const ajv = new Ajv2020({ strict: false, allErrors: true });
const SAMPLES = 6;
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[structured] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const schemas = {
  nested: {
    type: "object",
    properties: {
      id: { type: "integer", minimum: 0, maximum: 999 },
      owner: {
        type: "object",
        properties: { name: { type: "string", maxLength: 6 }, admin: { type: "boolean" } },
        required: ["name", "admin"], additionalProperties: false,
      },
      items: {
        type: "array", maxItems: 2,
        items: { type: "object", properties: { sku: { type: "string", maxLength: 4 }, qty: { type: "integer", minimum: 1, maximum: 9 } },
          required: ["sku", "qty"], additionalProperties: false },
      },
    },
    required: ["id", "owner", "items"], additionalProperties: false,
  },
  recursive_ref: {
    $defs: {
      node: {
        type: "object",
        properties: { value: { type: "integer", minimum: 0, maximum: 9 }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } },
        required: ["value", "next"], additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  },
  one_of: {
    oneOf: [
      { type: "object", properties: { kind: { const: "circle" }, r: { type: "integer", minimum: 1, maximum: 9 } }, required: ["kind", "r"],
        additionalProperties: false },
      { type: "object", properties: { kind: { const: "square" }, side: { type: "integer", minimum: 1, maximum: 9 } },
        required: ["kind", "side"], additionalProperties: false },
    ],
  },
  any_of: {
    type: "object",
    properties: { v: { anyOf: [{ type: "integer", minimum: -3, maximum: 3 }, { type: "string", maxLength: 3 }, { type: "boolean" }] } },
    required: ["v"], additionalProperties: false,
  },
  enum_const: {
    type: "object",
    properties: { color: { enum: ["red", "green", "blue", 7, null] }, version: { const: "v1" } },
    required: ["color", "version"], additionalProperties: false,
  },
  bounded: {
    type: "object",
    properties: {
      tags: { type: "array", items: { type: "string", minLength: 2, maxLength: 4 }, minItems: 2, maxItems: 3 },
      code: { type: "string", minLength: 3, maxLength: 3 },
    },
    required: ["tags", "code"], additionalProperties: false,
  },
  pattern: {
    type: "object",
    properties: { plate: { type: "string", pattern: "^[A-Z]{2}-[0-9]{3}$" }, zip: { type: "string", pattern: "^[0-9]{5}$" } },
    required: ["plate", "zip"], additionalProperties: false,
  },
  integer_ranges: {
    type: "object",
    properties: {
      small: { type: "integer", minimum: -5, maximum: 5 },
      odd_window: { type: "integer", exclusiveMinimum: 10, exclusiveMaximum: 20 },
      big: { type: "integer", minimum: 1000000, maximum: 1000010 },
    },
    required: ["small", "odd_window", "big"], additionalProperties: false,
  },
  unicode: {
    type: "object",
    properties: { "名前": { type: "string", maxLength: 3 }, "état": { enum: ["été", "hiver", "ünïcödé ✓"] } },
    required: ["名前", "état"], additionalProperties: false,
  },
};

async function sample(params, n = SAMPLES) {
  const answers = [];
  for (let seed = 1; seed <= n; ++seed) answers.push(await client.chat.completions.create({ model, temperature: 1, seed, ...params }));
  return answers.map((a) => a.choices[0]);
}

async function jsonSchemaSuite() {
  for (const [name, schema] of Object.entries(schemas)) {
    const validate = ajv.compile(schema);
    const choices = await sample({
      messages: [{ role: "user", content: `Give me a ${name} object.` }], max_tokens: 160,
      response_format: { type: "json_schema", json_schema: { name, schema, strict: true } },
      chat_template_kwargs: { enable_thinking: false },
    });
    let stopped = 0;
    const bad = [];
    for (const c of choices) {
      if (c.finish_reason !== "stop") continue;
      stopped += 1;
      let value;
      try {
        value = JSON.parse(c.message.content);
      } catch (e) {
        bad.push(`not JSON: ${c.message.content}`);
        continue;
      }
      if (!validate(value)) bad.push(`${c.message.content} -> ${ajv.errorsText(validate.errors)}`);
    }
    check(`json_schema ${name}: every completed answer validates (${stopped}/${choices.length} completed)`, bad.length === 0 && stopped > 0,
      bad.join(" | ") || "none completed");
  }
}

async function otherConstraints() {
  const completions = async (extra) => {
    const out = [];
    for (let seed = 1; seed <= SAMPLES; ++seed) {
      out.push((await client.completions.create({ model, prompt: "The label is", max_tokens: 40, temperature: 1, seed, ...extra })).choices[0]);
    }
    return out;
  };
  const regex = "(yes|no|maybe) [0-9]{1,3}(\\.[0-9])?";
  let got = await completions({ structured_outputs: { regex } });
  check("regex: every completed answer matches", got.every((c) => c.finish_reason !== "stop" || new RegExp(`^(?:${regex})$`).test(c.text)) &&
    got.some((c) => c.finish_reason === "stop"), JSON.stringify(got.map((c) => c.text)));

  const labels = ["positive", "negative", "mixed feelings", "ünïcödé ✓"];
  got = await completions({ structured_outputs: { choice: labels } });
  check("choice: every answer is one of the choices", got.every((c) => c.finish_reason === "stop" && labels.includes(c.text)),
    JSON.stringify(got.map((c) => c.text)));

  const grammar = 'root ::= item (", " item){0,2}\nitem ::= ("red" | "green") " " [0-9]';
  got = await completions({ structured_outputs: { grammar } });
  check("grammar: every answer is in the language", got.every((c) => c.finish_reason === "stop" &&
    /^(red|green) [0-9](, (red|green) [0-9]){0,2}$/.test(c.text)), JSON.stringify(got.map((c) => c.text)));

  got = await completions({ response_format: { type: "json_object" }, max_tokens: 60 });
  check("json_object: every completed answer is a JSON object", got.every((c) => {
    if (c.finish_reason !== "stop") return true;
    try { const v = JSON.parse(c.text); return v !== null && typeof v === "object" && !Array.isArray(v); } catch { return false; }
  }), JSON.stringify(got.map((c) => c.text)));

  const json = schemas.pattern;
  got = await completions({ structured_outputs: { json }, max_tokens: 60 });
  const validate = ajv.compile(json);
  check("structured_outputs.json on completions validates", got.every((c) => c.finish_reason !== "stop" || validate(JSON.parse(c.text))) &&
    got.some((c) => c.finish_reason === "stop"), JSON.stringify(got.map((c) => c.text)));
}

async function helperAndStream() {
  const schema = schemas.one_of;
  const parsed = await client.beta.chat.completions.parse({
    model, temperature: 1, seed: 5, max_tokens: 60, messages: [{ role: "user", content: "a shape" }],
    response_format: { type: "json_schema", json_schema: { name: "shape", schema, strict: true } },
    chat_template_kwargs: { enable_thinking: false },
  });
  const message = parsed.choices[0].message;
  check("the client's parse helper reads the answer", parsed.choices[0].finish_reason !== "stop" ||
    (message.parsed !== null && ajv.validate(schema, message.parsed)), JSON.stringify(message));

  const params = { model, temperature: 1, seed: 9, max_tokens: 80, messages: [{ role: "user", content: "a plate" }],
    response_format: { type: "json_schema", json_schema: { name: "plate", schema: schemas.pattern, strict: true } },
    chat_template_kwargs: { enable_thinking: false } };
  const whole = await client.chat.completions.create(params);
  let streamed = "";
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    for (const c of chunk.choices) {
      streamed += c.delta.content ?? "";
      finish = c.finish_reason ?? finish;
    }
  }
  check("a streamed constrained answer equals the whole one", streamed === whole.choices[0].message.content &&
    finish === whole.choices[0].finish_reason, `${JSON.stringify(streamed)} vs ${JSON.stringify(whole.choices[0].message.content)}`);
}

async function errors() {
  const refused = async (params, param, text) => {
    try {
      await client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], max_tokens: 4, ...params });
      check(`refused: ${param}`, false, "accepted");
    } catch (e) {
      check(`refused with 400 naming ${param}`, e.status === 400 && e.param === param && e.message.includes(text), `${e.status} ${e.param} ${e.message}`);
    }
  };
  await refused({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { a: { $ref: "#/$defs/missing" } } } } } },
    "response_format.json_schema.schema", "cannot be compiled");
  await refused({ structured_outputs: { regex: "(unclosed" } }, "structured_outputs.regex", "cannot be compiled");
  await refused({ structured_outputs: { grammar: "root ::= missing_rule" } }, "structured_outputs.grammar", "cannot be compiled");
  await refused({ structured_outputs: { regex: "a", choice: ["b"] } }, "structured_outputs.regex", "one constraint only");
  await refused({ response_format: { type: "xml" } }, "response_format.type", "not text, json_object or json_schema");
  await refused({ response_format: { type: "json_object" }, structured_outputs: { regex: "a" } }, "structured_outputs", "not both");
  await refused({ guided_json: { type: "object" } }, "guided_json", "structured_outputs.json");
  await refused({ made_up_parameter: 1 }, "made_up_parameter", "is not a known parameter");
  await refused({ audio: { voice: "x" } }, "audio", "not supported");
  const accepted = await client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], max_tokens: 2, user: "u1",
    store: false, metadata: { team: "a" }, service_tier: "auto", response_format: { type: "text" } });
  check("no-op parameters are accepted", accepted.choices.length === 1);
}

async function main() {
  await jsonSchemaSuite();
  await otherConstraints();
  await helperAndStream();
  await errors();
  if (failures > 0) {
    console.log(`[structured] ${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("[structured] all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
