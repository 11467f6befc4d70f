// The official `openai` npm client, unchanged, against edgellm serve: chat and completions,
// streaming and not, the include_usage chunk, errors as APIError subclasses with their status,
// and 429 answers retried by the client's own retry logic.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startServer } from "./server.mjs";

let server;
let client;
const KEY = "node-test-key";

before(async () => {
  server = await startServer(["--api-key-env", "EDGELLM_TEST_KEY", "-np", "2", "--max-queued", "1"],
                             { EDGELLM_TEST_KEY: KEY });
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: KEY, maxRetries: 0, timeout: 30000 });
});
after(async () => {
  assert.equal(await server.stop(), 0, "server exits cleanly on SIGTERM");
});

const messages = [{ role: "system", content: "You tell stories." }, { role: "user", content: "Once upon a time" }];

test("chat completion, not streamed", async () => {
  const r = await client.chat.completions.create({ model: "stories260K", messages, max_tokens: 24, temperature: 0 });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, "assistant");
  assert.ok(r.choices[0].message.content.length > 0);
  assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test("chat completion streamed with include_usage equals the non-streamed answer", async () => {
  const whole = await client.chat.completions.create({ model: "m", messages, max_tokens: 32, temperature: 0 });
  const stream = await client.chat.completions.create({
    model: "m", messages, max_tokens: 32, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = "";
  let usage = null;
  let finish = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) {
      usage = chunk.usage;
      assert.equal(chunk.choices.length, 0, "the usage chunk has no choices");
    }
    for (const c of chunk.choices) {
      text += c.delta.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks > 2);
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test("completion, streamed and not, same greedy text", async () => {
  const whole = await client.completions.create({ model: "m", prompt: "The little dog", max_tokens: 30, temperature: 0 });
  assert.equal(whole.object, "text_completion");
  const stream = await client.completions.create({ model: "m", prompt: "The little dog", max_tokens: 30, temperature: 0,
                                                   stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  assert.ok(whole.choices[0].text.length > 0);
  assert.equal(text, whole.choices[0].text);
});

// Speculative decoding per request (llama-server's speculative.n_max / n_min, the mode as
// x_edgellm_speculation; this server runs with --spec off): greedy with n-gram drafts gives the
// text of greedy without, and llama-server's timings.draft_n / draft_n_accepted report them.
test("speculation: greedy with n-gram drafts equals greedy without; timings.draft_n", async () => {
  const prompt = "The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog";
  const base = { model: "m", prompt, max_tokens: 48, temperature: 0, ignore_eos: true };
  const plain = await client.completions.create(base);
  const spec = await client.completions.create({ ...base, x_edgellm_speculation: "ngram", "speculative.n_max": 4,
                                                 "speculative.n_min": 1 });
  assert.equal(spec.choices[0].text, plain.choices[0].text);
  assert.equal(plain.timings.draft_n, 0);
  assert.ok(spec.timings.draft_n > 0, JSON.stringify(spec.timings));
  assert.ok(spec.timings.draft_n_accepted <= spec.timings.draft_n);
  assert.equal(spec.timings.predicted_n, spec.usage.completion_tokens);
  const x = spec.x_edgellm.speculation;
  assert.equal(x.drafted, spec.timings.draft_n);
  assert.ok(x.tokens_per_forward >= 1);
  assert.equal(x.off_reason, "");
  await assert.rejects(client.completions.create({ ...base, "speculative.n_max": 9 }),
                       (e) => e.status === 400 && /speculative\.n_max/.test(e.message));
  await assert.rejects(client.completions.create({ ...base, x_edgellm_speculation: "draft" }),
                       (e) => e.status === 400 && /draft model/.test(e.message));
});

test("errors are APIError subclasses with the status and the field", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "m", messages, temperature: 101 }),  // the Runtime's range: [0, 100]
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "temperature" &&
           /temperature/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({ model: "m", messages, n: 2 }),
    (e) => e instanceof OpenAI.APIError && e.status === 400 && e.param === "n");
  const wrongKey = new OpenAI({ baseURL: server.url + "/v1", apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(wrongKey.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  const models = await client.models.list();
  assert.equal(models.data[0].object, "model");
});

test("429 from a full queue is retried by the client and every call succeeds", async () => {
  // -np 2 --max-queued 1: at most 3 requests held. 12 at once: the rest get 429 + Retry-After.
  const noRetry = new OpenAI({ baseURL: server.url + "/v1", apiKey: KEY, maxRetries: 0 });
  const long = { model: "m", prompt: "Once upon a time", max_tokens: 400, ignore_eos: true };
  const settled = await Promise.allSettled(Array.from({ length: 12 }, () => noRetry.completions.create(long)));
  const limited = settled.filter((s) => s.status === "rejected");
  assert.ok(limited.length > 0, "some requests were refused");
  for (const s of limited) {
    assert.ok(s.reason instanceof OpenAI.RateLimitError, String(s.reason));
    assert.equal(s.reason.status, 429);
    assert.equal(s.reason.headers.get("retry-after"), "1");
  }

  const busyBefore = await server.metric("edgellm_http_busy_total");
  const retrying = new OpenAI({ baseURL: server.url + "/v1", apiKey: KEY, maxRetries: 8 });
  const results = await Promise.all(Array.from({ length: 8 }, () => retrying.completions.create(long)));
  for (const r of results) assert.equal(r.usage.completion_tokens, 400);
  const busyAfter = await server.metric("edgellm_http_busy_total");
  assert.ok(busyAfter > busyBefore, `the server answered 429 during the retried run (${busyBefore} -> ${busyAfter})`);
});
