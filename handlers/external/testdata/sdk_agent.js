// An agent written with the official OpenAI SDK for Node, run by flock's
// external workflow against its gateway session: non-streaming with a
// tool, streaming with usage, the model list, and a wrong key. It writes
// what it saw to sdk.json and prints its answer as a JSON line.
const fs = require("fs");
const mod = require("openai");
const OpenAI = mod.OpenAI || mod.default || mod;

const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 });
const model = process.env.OPENAI_MODEL;
const task = fs.readFileSync(0, "utf8").trim();
const tools = [{ type: "function", function: { name: "calculator", description: "arithmetic",
  parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } } }];

(async () => {
  const out = {};
  const messages = [{ role: "user", content: task }];
  const first = await client.chat.completions.create({ model, messages, tools });
  const call = first.choices[0].message.tool_calls[0];
  out.first = { id: first.id, finish: first.choices[0].finish_reason, tool: call.function.name,
    args: call.function.arguments, usage: first.usage };
  messages.push(first.choices[0].message);
  messages.push({ role: "tool", tool_call_id: call.id, content: "5" });
  const stream = await client.chat.completions.create({ model, messages, tools, stream: true,
    stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta.content || "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  out.stream = { text, finish, usage, chunks };
  // The SDK's stream helper assembles tool calls from their deltas.
  const runner = client.chat.completions.stream({ model, messages: [{ role: "user", content: "What is 2+3? (again)" }], tools });
  const final = await runner.finalChatCompletion();
  out.helper = { tool: final.choices[0].message.tool_calls[0].function.name,
    args: final.choices[0].message.tool_calls[0].function.arguments };
  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  out.models = models;
  const bad = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: "not-the-token", maxRetries: 0 });
  try {
    await bad.chat.completions.create({ model, messages });
    out.badKey = "accepted";
  } catch (e) {
    out.badKey = { status: e.status, type: e.type || (e.error && e.error.type) };
  }
  fs.writeFileSync("sdk.json", JSON.stringify(out));
  console.log(JSON.stringify({ answer: text }));
})().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(1);
});
