// Structured output and tool calls with the official `openai` client, unchanged, against
// edgellm serve on stories260K (which writes no JSON unless a grammar makes it): response_format
// json_schema, tools with tool_choice required / a named function / none, streamed and not, and
// a follow-up turn carrying the tool's result. The outputs are judged by python3-jsonschema
// (scripts/validate-json-outputs.py), which shares no code with the server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { startServer } from "./server.mjs";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
let server;
let client;

before(async () => {
  server = await startServer(["-np", "4", "-c", "4096"]);
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: "unused", maxRetries: 0, timeout: 60000 });
});
after(async () => {
  assert.equal(await server.stop(), 0, "server exits cleanly on SIGTERM");
});

// Temperature 1 with nothing cut off: the grammar is all that keeps the output valid.
const sampling = (seed, max_tokens) => ({ temperature: 1, top_p: 1, top_k: 0, min_p: 0, seed, max_tokens });

// python3-jsonschema's verdict on texts (each must parse and validate against `schema`).
function validate(schema, texts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "edgellm-structured-"));
  try {
    fs.writeFileSync(path.join(dir, "schema.json"), JSON.stringify(schema));
    fs.writeFileSync(path.join(dir, "outputs.jsonl"), texts.map((text) => JSON.stringify({ text })).join("\n") + "\n");
    return execFileSync("python3", [path.join(repo, "scripts/validate-json-outputs.py"),
      path.join(dir, "schema.json"), path.join(dir, "outputs.jsonl")], { encoding: "utf8" });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const person = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 12 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    pets: { type: "array", items: { enum: ["cat", "dog", "fish"] }, maxItems: 3 },
  },
  required: ["name", "age", "pets"],
  additionalProperties: false,
};

const tools = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: {
    type: "object", properties: { city: { type: "string", minLength: 1, maxLength: 10 },
      days: { type: "integer", minimum: 1, maximum: 7 } }, required: ["city", "days"], additionalProperties: false } } },
  { type: "function", function: { name: "set_alarm", description: "An alarm", parameters: {
    type: "object", properties: { hour: { type: "integer", minimum: 0, maximum: 23 } },
    required: ["hour"], additionalProperties: false } } },
];
// A call as {name, arguments} against "one of the tools with its parameters".
const callSchema = { anyOf: tools.map((t) => ({ type: "object", required: ["name", "arguments"],
  properties: { name: { const: t.function.name }, arguments: t.function.parameters } })) };
const callText = (c) => `{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}`;

test("response_format json_schema: every sampled answer validates", async () => {
  const answers = await Promise.all([1, 2, 3].map((seed) => client.chat.completions.create({
    model: "m", messages: [{ role: "user", content: "Who lives here?" }], ...sampling(seed, 200),
    response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema: person } },
  })));
  for (const a of answers) assert.equal(a.choices[0].finish_reason, "stop", a.choices[0].message.content);
  validate(person, answers.map((a) => a.choices[0].message.content));
  // The client's own check of the JSON: parse() throws on anything that is not.
  for (const a of answers) assert.equal(typeof JSON.parse(a.choices[0].message.content).age, "number");
});

test("response_format errors are APIError 400s naming the field", async () => {
  await assert.rejects(client.chat.completions.create({
    model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 4,
    response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", format: "uri" } } },
  }), (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "response_format.json_schema.schema" &&
    /format 'uri'/.test(e.message));
});

test("tools: required, a named function streamed, then the tool's result in the next turn", async () => {
  const messages = [{ role: "user", content: "What is the weather in Oslo?" }];
  const replies = await Promise.all([1, 2].map((seed) => client.chat.completions.create({
    model: "m", messages, tools, tool_choice: "required", parallel_tool_calls: false, ...sampling(seed, 300),
  })));
  const calls = [];
  for (const r of replies) {
    assert.equal(r.choices[0].finish_reason, "tool_calls", JSON.stringify(r));
    assert.equal(r.choices[0].message.tool_calls.length, 1);
    const c = r.choices[0].message.tool_calls[0];
    assert.equal(c.type, "function");
    assert.match(c.id, /^call_/);
    calls.push(c);
  }
  // Named, streamed: the client's deltas put together.
  const stream = await client.chat.completions.create({
    model: "m", messages: [{ role: "user", content: "Wake me at 7" }], tools,
    tool_choice: { type: "function", function: { name: "set_alarm" } }, stream: true, ...sampling(3, 300),
  });
  let streamed = null;
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.finish_reason) finish = c.finish_reason;
      for (const d of c.delta.tool_calls ?? []) {
        if (d.id) {
          assert.equal(streamed, null, "one call");
          streamed = { id: d.id, type: d.type, function: { name: d.function.name, arguments: "" } };
        }
        streamed.function.arguments += d.function.arguments ?? "";
      }
    }
  }
  assert.equal(finish, "tool_calls");
  assert.equal(streamed.function.name, "set_alarm");
  calls.push(streamed);
  validate(callSchema, calls.map(callText));

  // The conversation goes on with the call and its result; tool_choice none answers in text.
  const follow = await client.chat.completions.create({
    model: "m", tools, tool_choice: "none", ...sampling(4, 8),
    messages: [...messages, replies[0].choices[0].message,
      { role: "tool", tool_call_id: calls[0].id, content: "sunny, 21 degrees" }],
  });
  assert.equal(typeof follow.choices[0].message.content, "string");
  assert.equal(follow.choices[0].message.tool_calls, undefined);
  assert.equal(follow.usage.completion_tokens, 8);
});
