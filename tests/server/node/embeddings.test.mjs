// /v1/embeddings with the official `openai` npm client, unchanged (embeddings.create, float and
// base64), and /v1/rerank in llama-server's shape, against the CLI of the same build as the
// independent reference (`edgellm embed` / `edgellm rerank`: one request per process, no HTTP).
// Models: synthetic all-MiniLM-L6 and ms-marco cross-encoder shapes cut to 2 layers, Q8_0, with
// the real bge vocabulary (`edgellm synth`, 0.4 s each), served beside the generator with
// --embedding-model / --rerank-model. Vectors are compared exactly: the server writes each float
// as a double in %.17g and the CLI's raw format prints %.9g, both exact for a float (measured
// max |diff| 0); base64 carries the float32 bytes themselves.
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
function cliVectors(inputs, extra = []) {
  const file = path.join(dir, "texts.txt");
  fs.writeFileSync(file, inputs.join("\n"));
  const out = execFileSync(bin, ["embed", "-m", minilm, "-f", file, "--embd-output-format", "raw", ...extra],
    { maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "ignore"] }).toString();
  // %.9g read back as a float (Math.fround): the float the CLI printed.
  return out.trim().split("\n").map((line) => line.trim().split(/\s+/).map((v) => Math.fround(Number(v))));
}

let server;
let client;
const KEY = "embed-test-key";

before(async () => {
  server = await startServer(["--api-key-env", "EDGELLM_TEST_KEY", "--embedding-model", minilm, "--rerank-model", marco],
                             { EDGELLM_TEST_KEY: KEY });
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
