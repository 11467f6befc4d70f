// /v1/embeddings with the official `openai` npm client, unchanged (embeddings.create, float and
// base64), and /v1/rerank in llama-server's shape, against the CLI of the same build as the
// independent reference (`edgellm embed` / `edgellm rerank`: one request per process, no HTTP).
// Models: synthetic all-MiniLM-L6 and ms-marco cross-encoder shapes cut to 2 layers, Q8_0, with
// the real bge vocabulary (`edgellm synth`, 0.4 s each), served beside the generator with
// --embedding-model / --rerank-model. Vectors are compared exactly: the server writes each float
// as a double in %.17g and the CLI's raw format prints %.9g, both exact for a float (measured
// max |diff| 0); base64 carries the float32 bytes themselves.
// Document Q&A over HTTP (/v1/docqa/*, --docqa-index) is checked against `edgellm docqa list |
// search | ask --json` reading the index file the server wrote (a separate process: its own
// embedder, reranker and generator), streamed asks against the whole answer and the CLI's, and
// per-request "pooling" against `edgellm embed --pooling`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { bin, model, startServer } from "./server.mjs";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "edgellm-embed-serve-"));
const vocab = path.join(path.dirname(path.dirname(model)), "testdata/vocab/ggml-vocab-bert-bge.gguf");
function synth(shape) {
  const out = path.join(dir, `${shape}.gguf`);
  execFileSync(bin, ["synth", "--shape", shape, "--layers", "2", "--type", "q8_0", "--tokenizer", vocab, "-o", out, "-q"]);
  return out;
}
const minilm = synth("all-minilm-l6");
const marco = synth("ms-marco-minilm-l6");

// `edgellm embed -f FILE --embd-output-format raw`: one row per line.
function cliVectors(inputs, extra = [], embedder = minilm) {
  const file = path.join(dir, "texts.txt");
  fs.writeFileSync(file, inputs.join("\n"));
  const out = execFileSync(bin, ["embed", "-m", embedder, "-f", file, "--embd-output-format", "raw", ...extra],
    { maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "ignore"] }).toString();
  // %.9g read back as a float (Math.fround): the float the CLI printed.
  return out.trim().split("\n").map((line) => line.trim().split(/\s+/).map((v) => Math.fround(Number(v))));
}

let server;
let client;
const KEY = "embed-test-key";
const index = path.join(dir, "docqa.index");

before(async () => {
  server = await startServer(["--api-key-env", "EDGELLM_TEST_KEY", "--embedding-model", minilm, "--rerank-model", marco,
                              "--docqa-index", index], { EDGELLM_TEST_KEY: KEY });
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: KEY, maxRetries: 0, timeout: 30000 });
});
after(async () => {
  assert.equal(await server.stop(), 0, "server exits cleanly on SIGTERM");
  fs.rmSync(dir, { recursive: true, force: true });
});

const texts = ["The quick brown fox jumps over the lazy dog.", "Café crème brûlée!", "我的笔记在手机上", "hello"];

test("embeddings.create, float: the CLI's vectors exactly, usage", async () => {
  const want = cliVectors(texts);
  const r = await client.embeddings.create({ model: "all-minilm-l6", input: texts, encoding_format: "float" });
  assert.equal(r.object, "list");
  assert.equal(r.model, "all-minilm-l6");
  assert.equal(r.data.length, texts.length);
  r.data.forEach((d, i) => {
    assert.equal(d.object, "embedding");
    assert.equal(d.index, i);
    assert.deepEqual(d.embedding, want[i], `text ${i}`);
  });
  assert.ok(r.usage.prompt_tokens >= 4 * 3);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  const one = await client.embeddings.create({ model: "m", input: "hello", encoding_format: "float" });
  assert.deepEqual(one.data[0].embedding, want[3]);
  assert.equal(one.usage.prompt_tokens, 3);  // [CLS] hello [SEP]
});

test("embeddings.create, base64 (the client's default decodes it): the same floats", async () => {
  const want = cliVectors(texts);
  // Without encoding_format the client asks for base64 and decodes it into number arrays.
  const r = await client.embeddings.create({ model: "m", input: texts });
  r.data.forEach((d, i) => assert.deepEqual(Array.from(d.embedding), want[i], `text ${i}`));
  // The raw base64 string: little-endian float32 bytes.
  const raw = await client.embeddings.create({ model: "m", input: "hello", encoding_format: "base64" });
  assert.equal(typeof raw.data[0].embedding, "string");
  const bytes = Buffer.from(raw.data[0].embedding, "base64");
  assert.equal(bytes.length, 384 * 4);
  assert.deepEqual(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, 384)), want[3]);
});

test("token arrays are embedded as given; dimensions must be the model's", async () => {
  // [CLS] hello [SEP] as ids equals the text "hello" framed by the server.
  const tok = await fetch(server.url + "/tokenize", { method: "POST", headers: { Authorization: "Bearer " + KEY },
    body: JSON.stringify({ content: "x" }) });
  assert.equal(tok.status, 200);  // the generator's helper still answers beside the embedder
  const text = await client.embeddings.create({ model: "m", input: "hello", encoding_format: "float" });
  const ids = JSON.parse(execFileSync(bin, ["tokenize", "-m", minilm, "--json", "hello"],
    { stdio: ["ignore", "pipe", "ignore"] }).toString()).ids;
  const viaIds = await client.embeddings.create({ model: "m", input: [ids], encoding_format: "float" });
  assert.deepEqual(viaIds.data[0].embedding, text.data[0].embedding);
  const flat = await client.embeddings.create({ model: "m", input: ids, encoding_format: "float" });
  assert.deepEqual(flat.data[0].embedding, text.data[0].embedding);
  const same = await client.embeddings.create({ model: "m", input: "hello", dimensions: 384, encoding_format: "float" });
  assert.equal(same.data[0].embedding.length, 384);
  await assert.rejects(client.embeddings.create({ model: "m", input: "hello", dimensions: 128 }),
    (e) => e.status === 400 && /384/.test(e.message));
});

test("bad input: clear 400s", async () => {
  const cases = [
    [{ input: [] }, /empty/],
    [{ input: ["ok", ""] }, /empty/],
    [{ input: 42 }, /input/],
    [{ input: ["a", 7] }, /input\[1\]/],
    [{ input: [[1, 2, 99999999]] }, /vocabulary/],
    [{ input: "bell \u0007" }, /control/],
    [{ input: "word ".repeat(600) }, /512/],
    [{ input: new Array(3000).fill("a") }, /2048/],
    [{ input: "x", encoding_format: "int8" }, /encoding_format/],
  ];
  for (const [body, words] of cases) {
    await assert.rejects(client.embeddings.create({ model: "m", ...body }),
      (e) => e.status === 400 && words.test(e.message), JSON.stringify(body).slice(0, 60));
  }
  // Invalid UTF-8 in the body: not JSON, refused before it reaches the model.
  const res = await fetch(server.url + "/v1/embeddings", {
    method: "POST", headers: { Authorization: "Bearer " + KEY, "Content-Type": "application/json" },
    body: Buffer.concat([Buffer.from('{"input": "caf'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
  });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, /UTF-8|JSON/);
});

test("/v1/rerank: llama-server's shape, the CLI's scores, best first, top_n, documents", async () => {
  const query = "what do pandas eat";
  const docs = ["Giant pandas eat bamboo.", "The stock market fell.", "熊猫吃竹子", "Pandas are bears."];
  const args = ["rerank", "-m", marco, "-q", query, "--json"];
  for (const d of docs) args.push("-d", d);
  const want = JSON.parse(execFileSync(bin, args, { stdio: ["ignore", "pipe", "ignore"] }).toString());
  const post = (body) => fetch(server.url + "/v1/rerank", {
    method: "POST", headers: { Authorization: "Bearer " + KEY, "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const res = await post({ model: "m", query, documents: docs });
  assert.equal(res.status, 200);
  const r = await res.json();
  assert.deepEqual(r.results.map((e) => [e.index, e.relevance_score]), want.results.map((e) => [e.index, e.relevance_score]));
  assert.equal(r.usage.prompt_tokens, want.usage.prompt_tokens);
  const top = await (await post({ query, documents: docs.map((text) => ({ text })), top_n: 2, return_documents: true })).json();
  assert.equal(top.results.length, 2);
  assert.deepEqual(top.results.map((e) => e.document.text), want.results.slice(0, 2).map((e) => e.document));
  for (const [body, words] of [[{ documents: docs }, /query/], [{ query, documents: [] }, /empty/],
    [{ query, documents: [1] }, /documents\[0\]/], [{ query, documents: docs, top_n: 0 }, /top_n/]]) {
    const bad = await post(body);
    assert.equal(bad.status, 400, JSON.stringify(body));
    assert.match((await bad.json()).error.message, words);
  }
});

test("/v1/models lists the generator, the embedder and the reranker (openai client)", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push([m.id, m.meta && m.meta.endpoint, m.meta && m.meta.dims]);
  assert.deepEqual(ids.slice(1), [["all-minilm-l6", "/v1/embeddings", 384], ["ms-marco-minilm-l6", "/v1/rerank", 384]]);
});

test("/metrics: the embedding runtimes' series, labelled, each name declared once", async () => {
  const text = await (await fetch(server.url + "/metrics", { headers: { Authorization: "Bearer " + KEY } })).text();
  const value = (series) => {
    const line = text.split("\n").find((l) => l.startsWith(series + " "));
    return line ? Number(line.slice(series.length + 1)) : NaN;
  };
  // The tests above ran 9 embedding requests and 2 rerank requests to their end (and more that
  // were refused).
  const emb = value('edgellm_embedding_requests_finished_total{runtime="embeddings"}');
  const rr = value('edgellm_embedding_requests_finished_total{runtime="rerank"}');
  assert.ok(emb >= 9, `embeddings finished: ${emb}`);
  assert.ok(rr >= 2, `rerank finished: ${rr}`);
  assert.ok(value('edgellm_embedding_request_seconds_count{runtime="rerank"}') >= 2, "rerank histogram");
  const declared = text.split("\n").filter((l) => l.startsWith("# TYPE ")).map((l) => l.split(" ")[2]);
  const twice = declared.filter((n, i) => declared.indexOf(n) !== i);
  assert.deepEqual(twice, [], "metrics declared twice");
});

test("per-request pooling: the CLI's --pooling vectors exactly; none / rank / numbers are 400s", async () => {
  for (const pooling of ["cls", "last"]) {  // mean is the model's: "model" below
    const want = cliVectors(texts.slice(0, 2), ["--pooling", pooling]);
    const r = await client.embeddings.create({ model: "m", input: texts.slice(0, 2), encoding_format: "float", pooling });
    r.data.forEach((d, i) => assert.deepEqual(d.embedding, want[i], `${pooling} text ${i}`));
  }
  // "model": the GGUF's (mean for this synthetic MiniLM), as edgellm_embed's EDGELLM_POOLING_MODEL.
  const model = await client.embeddings.create({ model: "m", input: "hello", encoding_format: "float", pooling: "model" });
  assert.deepEqual(model.data[0].embedding, cliVectors(["hello"])[0]);
  const cls = await client.embeddings.create({ model: "m", input: "hello", encoding_format: "float", pooling: "cls" });
  assert.notDeepEqual(cls.data[0].embedding, model.data[0].embedding, "pooling changes the vector");
  for (const [pooling, words] of [["none", /per token.*pooling/], ["rank", /pooling/], [2, /pooling/], ["CLS", /pooling/]]) {
    await assert.rejects(client.embeddings.create({ model: "m", input: "hello", pooling }),
      (e) => e.status === 400 && words.test(e.message) && e.param === "pooling", String(pooling));
  }
});

// Document Q&A: the server's answers against the CLI on the index file the server saved.
const call = async (method, route, body) => {
  const res = await fetch(server.url + route, {
    method, headers: { Authorization: "Bearer " + KEY, "Content-Type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
};
const cli = (args) => JSON.parse(execFileSync(bin, ["docqa", ...args, "--index", index, "--json"],
  { stdio: ["ignore", "pipe", "ignore"], maxBuffer: 1 << 26 }).toString());
// The CLI names the document key "path"; the server "key".
const asServerHit = (h) => {
  const { path: key, ...rest } = h;
  return { key, ...rest };
};
const docs = {
  "pandas.md": "Giant pandas eat bamboo. They live in the mountains of central China. A panda eats for up to fourteen " +
    "hours a day.\n\nRed pandas are smaller and live in the Himalayas.",
  "notes/stocks 2026": "The stock market fell sharply on Monday. Investors sold technology shares and bought bonds.",
  "熊猫.txt": "熊猫吃竹子。它们生活在中国的山区。",
};
const question = "what do pandas eat";

test("/v1/docqa: add, list, search, update, delete and ask equal `edgellm docqa` on the index file", async () => {
  for (const [key, text] of Object.entries(docs)) {
    const r = await call("POST", "/v1/docqa/documents", { key, text });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, "added");
    assert.ok(r.body.chunks_added >= 1 && r.body.tokens_embedded > 0);
  }
  const again = await call("POST", "/v1/docqa/documents", { key: "pandas.md", text: docs["pandas.md"] });
  assert.deepEqual([again.status, again.body.status, again.body.tokens_embedded], [200, "unchanged", 0]);
  // The list: what the index file holds (keys sorted, bytes, chunks, SHA-256 of the text).
  const list = await call("GET", "/v1/docqa/documents");
  assert.equal(list.status, 200);
  const file = cli(["list"]);
  assert.deepEqual(list.body.data, file.documents.map(asServerHit));
  assert.deepEqual([list.body.dims, list.body.vectors, list.body.model], [file.dims, file.vectors, file.model]);
  // Search: the same hits (ids, byte ranges, texts, cosine and rerank scores) as the CLI's own
  // embedder and reranker over the file.
  const search = await call("POST", "/v1/docqa/search", { query: question, top_k: 3 });
  assert.equal(search.status, 200, JSON.stringify(search.body));
  const want = cli(["search", question, "-m", minilm, "--rerank-model", marco, "--top-k", "3"]);
  assert.equal(search.body.hits.length, 3);
  assert.deepEqual(search.body.hits, want.hits.map(asServerHit));
  for (const h of search.body.hits) {
    assert.equal(Buffer.from(docs[h.key]).subarray(h.begin, h.end).toString(), h.text, "the byte range holds the text");
  }
  // Update, then delete: the file has no stale chunk.
  const upd = await call("POST", "/v1/docqa/documents", { key: "pandas.md", text: "Pandas sleep in trees." });
  assert.deepEqual([upd.status, upd.body.status], [200, "updated"]);
  const del = await call("DELETE", "/v1/docqa/documents/notes%2Fstocks%202026");
  assert.deepEqual([del.status, del.body.deleted, del.body.documents], [200, true, 2]);
  const after = cli(["search", question, "-m", minilm, "--rerank-model", marco, "--top-k", "8"]);
  assert.deepEqual(after.hits.map((h) => h.path).sort(), ["pandas.md", "熊猫.txt"]);
  assert.ok(after.hits.every((h) => h.text !== docs["pandas.md"] && !h.text.includes("stock")), "no stale chunk");
  const again2 = await call("POST", "/v1/docqa/search", { query: question, top_k: 8 });
  assert.deepEqual(again2.body.hits, after.hits.map(asServerHit));
  // Ask: the chat model (-m, greedy) writes the same answer from the same passages as the CLI's
  // generator on the same file; citations are chunks it was given.
  const ask = await call("POST", "/v1/docqa/ask", { question });
  assert.equal(ask.status, 200, JSON.stringify(ask.body));
  const wantAsk = cli(["ask", question, "-m", minilm, "--rerank-model", marco, "--gen-model", model]);
  assert.equal(ask.body.answer, wantAsk.answer);
  assert.equal(ask.body.finish_reason, wantAsk.finish_reason);
  assert.deepEqual(ask.body.context, wantAsk.context.map(asServerHit));
  assert.deepEqual(ask.body.citations, wantAsk.citations.map(asServerHit));
  const given = new Set(ask.body.context.map((h) => h.chunk));
  assert.ok(ask.body.citations.every((c) => given.has(c.chunk)));
});

// A streamed ask's SSE events, parsed ("data: [DONE]" last, as the string "[DONE]").
async function askStream(body) {
  const res = await fetch(server.url + "/v1/docqa/ask", {
    method: "POST", headers: { Authorization: "Bearer " + KEY, "Content-Type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /text\/event-stream/);
  const text = await res.text();
  return text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6))
    .map((d) => (d === "[DONE]" ? d : JSON.parse(d)));
}
const admin = async (route) => (await call(route === "/admin/state" ? "GET" : "POST", route)).body;
// Polls GET /admin/state (and the disconnect counter) until `ok` holds; fails after 20 s.
async function waitFor(ok, what) {
  const until = Date.now() + 20000;
  for (;;) {
    const state = await admin("/admin/state");
    const gone = await server.metric("edgellm_http_client_disconnects_total");
    if (ok(state, gone)) return;
    assert.ok(Date.now() < until, `${what}: still ${JSON.stringify(state)}, disconnects ${gone}`);
    await new Promise((r) => setImmediate(r));
  }
}

test("/v1/docqa/ask streamed: context first, deltas concatenated = the whole answer = the CLI's, then citations", async () => {
  const whole = await call("POST", "/v1/docqa/ask", { question });
  assert.equal(whole.status, 200, JSON.stringify(whole.body));
  const wantAsk = cli(["ask", question, "-m", minilm, "--rerank-model", marco, "--gen-model", model]);
  assert.equal(whole.body.answer, wantAsk.answer);
  const events = await askStream({ question });
  assert.equal(events.at(-1), "[DONE]");
  const [first, ...rest] = events.slice(0, -1);
  const done = rest.at(-1);
  const deltas = rest.slice(0, -1);
  assert.equal(first.object, "docqa.ask.context");
  assert.deepEqual(first.context, whole.body.context);
  assert.deepEqual(first.context, wantAsk.context.map(asServerHit));
  assert.ok(deltas.length > 1 && deltas.every((e) => e.object === "docqa.ask.delta" && e.delta.length > 0));
  assert.equal(deltas.map((e) => e.delta).join(""), whole.body.answer);
  assert.equal(done.object, "docqa.ask.done");
  assert.equal(done.finish_reason, wantAsk.finish_reason);
  assert.deepEqual(done.citations, whole.body.citations);
  assert.deepEqual(done.citations, wantAsk.citations.map(asServerHit));
});

test("/v1/docqa/ask streamed: a client that leaves cancels the generation; the next ask is served", async () => {
  const full = (await call("POST", "/v1/docqa/ask", { question })).body.answer;
  const gone0 = await server.metric("edgellm_http_client_disconnects_total");
  // Paused (POST /admin/pause): the answer cannot finish before the client leaves, on any machine.
  assert.equal((await admin("/admin/pause")).paused, true);
  try {
    const abort = new AbortController();
    const res = await fetch(server.url + "/v1/docqa/ask", {
      method: "POST", headers: { Authorization: "Bearer " + KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ question, stream: true }), signal: abort.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    let seen = "";
    while (!seen.includes("\n\n")) seen += Buffer.from((await reader.read()).value).toString();
    assert.match(seen, /^data: \{"object": "docqa.ask.context"/);
    abort.abort();
    // The server notices, counts the disconnect and cancels the queued generation.
    await waitFor((s, gone) => gone === gone0 + 1 && s.running === 0 && s.waiting === 0, "cancelled after the disconnect");
  } finally {
    await admin("/admin/resume");
  }
  const next = await call("POST", "/v1/docqa/ask", { question });
  assert.equal(next.status, 200);
  assert.equal(next.body.answer, full);
  assert.deepEqual((await askStream({ question })).slice(1, -2).map((e) => e.delta).join(""), full);
});

test("/v1/docqa/ask within x_edgellm_deadline_ms: 1 ms ends \"timeout\" as a chat completion's does", async () => {
  const full = (await call("POST", "/v1/docqa/ask", { question })).body.answer;
  const chat = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: question }],
    max_tokens: 50, x_edgellm_deadline_ms: 1 });
  assert.equal(chat.x_edgellm.finish_reason, "timeout");
  const r = await call("POST", "/v1/docqa/ask", { question, x_edgellm_deadline_ms: 1 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.finish_reason, "timeout");
  assert.ok(full.startsWith(r.body.answer), "the text so far");
  const events = await askStream({ question, x_edgellm_deadline_ms: 1 });
  assert.equal(events.at(-2).object, "docqa.ask.done");
  assert.equal(events.at(-2).finish_reason, "timeout");
  assert.ok(full.startsWith(events.slice(1, -2).map((e) => e.delta).join("")));
  // Over the server's --timeout: the chat endpoints' 400, naming the field.
  for (const route of ["/v1/docqa/ask", "/v1/chat/completions"]) {
    const bad = await call("POST", route, { question, messages: [{ role: "user", content: "x" }], x_edgellm_deadline_ms: 120001 });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, "x_edgellm_deadline_ms");
    assert.match(bad.body.error.message, /at most this server's --timeout \(120000 ms\)/);
  }
});

test("/v1/docqa: bad input gets a clear error and leaves the index file as it was", async () => {
  const before = fs.readFileSync(index);
  const cases = [
    ["POST", "/v1/docqa/documents", { text: "x" }, 400, /key/],
    ["POST", "/v1/docqa/documents", { key: "k" }, 400, /text/],
    ["POST", "/v1/docqa/documents", { key: "k", text: " \n\t " }, 400, /text.*empty/],
    ["POST", "/v1/docqa/documents", { key: "", text: "x" }, 400, /key must be 1 to 4096 bytes/],
    ["POST", "/v1/docqa/documents", { key: "a\u0001b", text: "x" }, 400, /control character/],
    ["POST", "/v1/docqa/documents", { key: 7, text: "x" }, 400, /key/],
    ["POST", "/v1/docqa/documents", Buffer.concat([Buffer.from('{"key": "k", "text": "caf'), Buffer.from([0xc3, 0x28]),
      Buffer.from('"}')]), 400, /UTF-8|JSON/],
    ["POST", "/v1/docqa/documents", "{\"key\": \"k\", \"text\": ", 400, /JSON/],
    ["DELETE", "/v1/docqa/documents/nobody", undefined, 404, /no document has the key 'nobody'/],
    ["DELETE", "/v1/docqa/documents/bad%zz", undefined, 400, /hex digits/],
    ["POST", "/v1/docqa/search", { top_k: 2 }, 400, /query/],
    ["POST", "/v1/docqa/search", { query: "q", top_k: 0 }, 400, /top_k/],
    ["POST", "/v1/docqa/search", { query: "q", top_k: 1.5 }, 400, /top_k/],
    ["POST", "/v1/docqa/ask", { question: "" }, 400, /question/],
    ["POST", "/v1/docqa/ask", { question: "q", stream: "yes" }, 400, /stream/],
    ["POST", "/v1/docqa/ask", { question: "q", x_edgellm_deadline_ms: 0 }, 400, /x_edgellm_deadline_ms/],
    ["POST", "/v1/docqa/ask", { question: "q", x_edgellm_deadline_ms: "9" }, 400, /x_edgellm_deadline_ms/],
    ["PUT", "/v1/docqa/documents", { key: "k", text: "x" }, 405, /PUT/],
  ];
  for (const [method, route, body, status, words] of cases) {
    const r = await call(method, route, body);
    assert.equal(r.status, status, `${method} ${route} ${String(JSON.stringify(body)).slice(0, 60)}`);
    assert.match(r.body.error.message, words);
  }
  assert.ok(before.equals(fs.readFileSync(index)), "the index file is unchanged");
  // Without the key: 401 like every endpoint but / and /health.
  assert.equal((await fetch(server.url + "/v1/docqa/documents")).status, 401);
});

test("/v1/docqa: a save that fails is a 500 and the server's index stays what the file holds", async () => {
  // The backup's name taken by a non-empty folder: the save's first step (the current file
  // renamed over "<index>.bak") fails, as a full disk would fail the write.
  const bak = index + ".bak";
  fs.rmSync(bak, { recursive: true, force: true });
  fs.mkdirSync(path.join(bak, "blocker"), { recursive: true });
  try {
    const before = fs.readFileSync(index);
    const r = await call("POST", "/v1/docqa/documents", { key: "unsaved", text: "This text never reaches the disk." });
    assert.equal(r.status, 500, JSON.stringify(r.body));
    assert.match(r.body.error.message, /\.bak/);
    assert.ok(before.equals(fs.readFileSync(index)), "the index file is unchanged");
    const list = await call("GET", "/v1/docqa/documents");
    assert.deepEqual(list.body.data, cli(["list"]).documents.map(asServerHit));
    const hits = await call("POST", "/v1/docqa/search", { query: "This text never reaches the disk.", top_k: 8 });
    assert.ok(hits.body.hits.every((h) => h.key !== "unsaved"), "no hit of the unsaved document");
  } finally {
    fs.rmSync(bak, { recursive: true, force: true });
    fs.rmSync(bak + ".tmp", { force: true });
  }
});

test("/v1/docqa without an embedding model: refused at start, or 501 naming the flags", async () => {
  assert.throws(() => execFileSync(bin, ["serve", "-m", model, "--port", "0", "--docqa-index", index],
    { stdio: ["ignore", "ignore", "pipe"] }), (e) => /--docqa-index needs --embedding-model/.test(e.stderr.toString()));
  const plain = await startServer([]);
  try {
    const res = await fetch(plain.url + "/v1/docqa/search", { method: "POST", body: JSON.stringify({ query: "q" }) });
    assert.equal(res.status, 501);
    assert.match((await res.json()).error.message, /--embedding-model FILE --docqa-index FILE/);
  } finally {
    assert.equal(await plain.stop(), 0);
  }
});

// llama-server's embedding mode: `serve -m ENCODER --embeddings` serves /v1/embeddings from -m
// itself (no generator), and the generation endpoints answer 501 not_supported_error in
// llama-server's words; `--reranking` (`--rerank`) the same for /v1/rerank from a cross-encoder.
test("serve -m bge-small --embeddings: the CLI's vectors; completions 501 as llama-server", async () => {
  const bge = synth("bge-small-en");
  const cliBge = (inputs, extra = []) => cliVectors(inputs, extra, bge);
  // Without the flag an encoder at -m is refused at start, naming the flags.
  assert.throws(() => execFileSync(bin, ["serve", "-m", bge, "--port", "0", "--no-warmup"],
    { stdio: ["ignore", "ignore", "pipe"] }), (e) => e.status === 2 && /--embeddings/.test(e.stderr.toString()));
  const only = await startServer(["-m", bge, "--embeddings", "--pooling", "mean"]);
  try {
    assert.match(only.log(), /\/v1\/embeddings only/);
    const c = new OpenAI({ baseURL: only.url + "/v1", apiKey: "none", maxRetries: 0, timeout: 30000 });
    const want = cliBge(texts, ["--pooling", "mean"]);
    const r = await c.embeddings.create({ model: "bge-small-en", input: texts, encoding_format: "float" });
    assert.equal(r.model, "bge-small-en");
    r.data.forEach((d, i) => assert.deepEqual(d.embedding, want[i], `text ${i}`));
    // The model's own pooling (CLS for bge) differs from --pooling mean: the flag reached the server.
    assert.notDeepEqual(cliBge(texts.slice(0, 1))[0], want[0]);
    for (const [p, body] of [["/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }],
      ["/v1/completions", { prompt: "hi" }]]) {
      const res = await fetch(only.url + p, { method: "POST", body: JSON.stringify(body) });
      assert.equal(res.status, 501, p);
      const e = (await res.json()).error;
      assert.equal(e.type, "not_supported_error");
      assert.equal(e.message, "This server does not support completions. Start it without `--embeddings`");
    }
    const rr = await fetch(only.url + "/v1/rerank", { method: "POST", body: JSON.stringify({ query: "q", documents: ["d"] }) });
    assert.equal(rr.status, 501);
    assert.match((await rr.json()).error.message, /--reranking/);
    const tok = await fetch(only.url + "/tokenize", { method: "POST", body: JSON.stringify({ content: "x" }) });
    assert.equal(tok.status, 501);
    const models = (await (await fetch(only.url + "/v1/models")).json()).data;
    assert.deepEqual(models.map((m) => [m.id, m.meta.endpoint, m.meta.dims]), [["bge-small-en", "/v1/embeddings", 384]]);
    assert.equal((await fetch(only.url + "/health")).status, 200);
    assert.match(await (await fetch(only.url + "/metrics")).text(), /runtime="embeddings"/);
  } finally {
    assert.equal(await only.stop(), 0);
  }
  // --rerank (llama-server's alias of --reranking): /v1/rerank from -m, the CLI's scores.
  const rer = await startServer(["-m", marco, "--rerank"]);
  try {
    const query = "what do pandas eat";
    const docs = ["Giant pandas eat bamboo.", "The stock market fell."];
    const want = JSON.parse(execFileSync(bin, ["rerank", "-m", marco, "-q", query, "-d", docs[0], "-d", docs[1], "--json"],
      { stdio: ["ignore", "pipe", "ignore"] }).toString());
    const res = await fetch(rer.url + "/v1/rerank", { method: "POST", body: JSON.stringify({ query, documents: docs }) });
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).results.map((e) => [e.index, e.relevance_score]),
      want.results.map((e) => [e.index, e.relevance_score]));
    const emb = await fetch(rer.url + "/v1/embeddings", { method: "POST", body: JSON.stringify({ input: "x" }) });
    assert.equal(emb.status, 501);
    assert.match((await emb.json()).error.message, /--embeddings/);
  } finally {
    assert.equal(await rer.stop(), 0);
  }
});
