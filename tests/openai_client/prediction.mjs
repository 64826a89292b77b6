// Predicted outputs through the official openai npm client (node prediction.mjs HTTP_ADDRESS MODEL): a chat completion
// with `prediction` answers what it answers without one, whole and streamed, and usage.completion_tokens_details
// reports the predicted tokens kept and dropped as OpenAI names them.
import OpenAI from "openai";

const [httpAddress, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://${httpAddress}/v1`, apiKey: "not-needed", maxRetries: 0 });
let failures = 0;

function check(name, ok, detail = "") {
  console.log(`[openai-prediction] ${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

async function main() {
  const request = { model, messages: [{ role: "user", content: "Rewrite the opening of the play." }], max_tokens: 48, temperature: 0 };
  const plain = await client.chat.completions.create(request);
  const text = plain.choices[0].message.content;
  check("an answer without a prediction reports no prediction tokens", plain.usage.completion_tokens_details === undefined,
    JSON.stringify(plain.usage));

  const predicted = await client.chat.completions.create({ ...request, prediction: { type: "content", content: text } });
  check("the same answer with its own text as the prediction", predicted.choices[0].message.content === text,
    `${JSON.stringify(predicted.choices[0].message.content)} vs ${JSON.stringify(text)}`);
  const details = predicted.usage.completion_tokens_details ?? {};
  check("usage counts the predicted tokens kept", details.accepted_prediction_tokens > 20 && details.rejected_prediction_tokens === 0,
    JSON.stringify(predicted.usage));
  check("completion tokens are the answer's", predicted.usage.completion_tokens === plain.usage.completion_tokens,
    `${predicted.usage.completion_tokens} vs ${plain.usage.completion_tokens}`);

  const edited = `${text.slice(0, 20)} and something else entirely ${text.slice(20)}`;
  const stream = await client.chat.completions.create({
    ...request, stream: true, stream_options: { include_usage: true }, prediction: { type: "content", content: [{ type: "text", text: edited }] },
  });
  let streamed = "";
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) streamed += chunk.choices[0].delta.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  }
  check("streamed with an edited prediction in text parts: the same answer", streamed === text, `${JSON.stringify(streamed)}`);
  check("the stream's usage reports kept and dropped prediction tokens", usage?.completion_tokens_details?.accepted_prediction_tokens > 0 &&
    usage.completion_tokens_details.rejected_prediction_tokens >= 0, JSON.stringify(usage));

  try {
    await client.chat.completions.create({ ...request, prediction: { type: "text", content: "x" } });
    check("a prediction of another type is refused", false, "answered");
  } catch (e) {
    check("a prediction of another type is a BadRequestError naming prediction.type", e.status === 400 && e.param === "prediction.type",
      `${e.status} ${e.param}`);
  }
  if (failures > 0) {
    console.log(`[openai-prediction] ${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("[openai-prediction] all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
