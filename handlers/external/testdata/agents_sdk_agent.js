// An agent written with the OpenAI Agents SDK for JavaScript
// (@openai/agents) on its default settings, which call the Responses API
// (POST /v1/responses) with OPENAI_BASE_URL and OPENAI_API_KEY from the
// environment: a function tool round trip not streamed, the same streamed,
// then a run continuing the first by previous_response_id. It writes what
// it saw to agents_sdk.json and prints its answer as a JSON line.
const fs = require("fs");
const { Agent, run, tool } = require("@openai/agents");
const { z } = require("zod");

const task = fs.readFileSync(0, "utf8").trim();
const calls = [];
const calculator = tool({
  name: "calculator",
  description: "Evaluate an arithmetic expression.",
  parameters: z.object({ expression: z.string() }),
  execute: async ({ expression }) => {
    calls.push(expression);
    return String(Function(`"use strict"; return (${expression});`)());
  },
});
const agent = new Agent({
  name: "calculator agent",
  instructions: "Answer arithmetic questions with the calculator.",
  model: process.env.OPENAI_MODEL,
  tools: [calculator],
});

(async () => {
  const out = {};
  const first = await run(agent, task);
  out.plain = { final: first.finalOutput, lastResponseId: first.lastResponseId,
    items: first.newItems.map((i) => i.type) };

  const streamed = await run(agent, "What is 4*5? (streamed)", { stream: true });
  let text = "";
  const events = new Set();
  for await (const ev of streamed) {
    if (ev.type === "raw_model_stream_event") {
      events.add(ev.data.type === "model" ? ev.data.event.type : ev.data.type);
      if (ev.data.type === "output_text_delta") text += ev.data.delta;
    }
  }
  await streamed.completed;
  out.stream = { final: streamed.finalOutput, text, events: [...events].sort(),
    items: streamed.newItems.map((i) => i.type) };

  const chained = await run(agent, "And doubled?", { previousResponseId: first.lastResponseId });
  out.chained = { final: chained.finalOutput };
  out.toolCalls = calls;
  fs.writeFileSync("agents_sdk.json", JSON.stringify(out));
  console.log(JSON.stringify({ answer: first.finalOutput }));
})().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
