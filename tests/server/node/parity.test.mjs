// The face-parity table (tests/parity/cases.json) through `edgellm serve`, compared with the C
// ABI's answers (tests/parity/parity_capi.c, run on the same cases): the same text for every good
// request, and for every bad one the same status (as OpenAI's HTTP status and code) and the
// C ABI's message word for word. A case HTTP cannot express is left out ('faces'); a case where
// HTTP answers differently is recorded in the table ('differs') and checked as recorded.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bin, startServer } from "./server.mjs";
import { table, cases, expand, runCapi, compareBad, modelPath } from "../../parity/parity.mjs";

// The C runner of the same build (CMake puts it in <build>/tests/).
const capiBin = process.env.EDGELLM_PARITY_CAPI || path.join(path.dirname(bin), "tests", "parity_capi");
// The runtime's shape as the C runner's (parity_capi.c: n_ctx, n_parallel, max_queued, F32 KV).
const rt = table.runtime;
const serveArgs = ["-c", String(rt.n_ctx), "-np", String(rt.n_parallel), "--max-queued", String(rt.max_queued),
                   "--kv-type", "f32"];

// OpenAI's status and code for each C ABI status a case may end with (api_response.cpp).
// The session import endpoint names INVALID_ARGUMENT more precisely: session_mismatch (another
// model file, KV type or shape; docs/server.md "Sessions").
const httpOf = {
  invalid_argument: { status: 400, codes: ["invalid_value", "session_mismatch"] },
  context_full: { status: 400, codes: ["context_length_exceeded"] },
};

let server;
let dir;
let capi;
const list = cases("http");

// A session of another model: kept by a second server on tiny-zh-poems, exported as bytes.
async function foreignSession(id) {
  const other = await startServer(["-m", modelPath("tiny-zh-poems.gguf"), "--kv-type", "f32"]);
  try {
    const r = await fetch(other.url + "/v1/completions", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ prompt: "春", max_tokens: 2, temperature: 0, x_edgellm_session: id }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    const bytes = Buffer.from(await (await fetch(`${other.url}/v1/sessions/${id}/export`)).arrayBuffer());
    assert.ok(bytes.length > 0);
    return bytes;
  } finally {
    await other.stop();
  }
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "edgellm-parity-"));
  const sessionFiles = {};
  for (const c of list.filter((c) => c.import_session)) {
    sessionFiles[c.name] = path.join(dir, "other.session");
    fs.writeFileSync(sessionFiles[c.name], await foreignSession(c.import_session.id));
  }
  capi = runCapi(capiBin, cases("c"), sessionFiles);
  server = await startServer(serveArgs);
});
after(async () => {
  if (server) assert.equal(await server.stop(), 0, "server exits cleanly on SIGTERM");
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// The case's request as an OpenAI body: { path, body (a Buffer: a prompt may be invalid UTF-8) }.
function httpRequest(r) {
  const body = {};
  let endpoint = "/v1/completions";
  if (r.messages !== undefined) {
    endpoint = "/v1/chat/completions";
    body.messages = r.messages;
  } else if (r.tokens !== undefined) {
    body.prompt = r.tokens;
  }
  for (const k of ["max_tokens", "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "frequency_penalty",
                   "presence_penalty", "seed", "stop", "n_keep"]) {
    if (r[k] !== undefined) body[k] = r[k];
  }
  if (r.logit_bias !== undefined) body.logit_bias = Object.fromEntries(r.logit_bias.map(([id, b]) => [String(id), b]));
  if (r.session_id !== undefined) body.x_edgellm_session = r.session_id;
  // llama-server's name for the penalties' window; priority as the C ABI's number (HTTP takes
  // it as it is, like the names); the raw prompt's tokenization flags (/v1/completions).
  if (r.penalty_last_n !== undefined) body.repeat_last_n = r.penalty_last_n;
  for (const k of ["priority", "add_special", "parse_special"]) if (r[k] !== undefined) body[k] = r[k];
  let bytes = Buffer.from(JSON.stringify(body));
  if (Buffer.isBuffer(r.prompt)) {
    // Raw bytes in the JSON string (JSON.stringify cannot write invalid UTF-8): {"prompt":"<bytes>",...}
    bytes = Buffer.concat([Buffer.from('{"prompt":"'), r.prompt, Buffer.from('"'),
                           Buffer.from(bytes.length > 2 ? "," + bytes.subarray(1) : "}")]);
  } else if (r.prompt !== undefined) {
    bytes = Buffer.from(JSON.stringify({ prompt: r.prompt, ...body }));
  }
  return { endpoint, bytes };
}

// One case through HTTP, as a face answer ({ ok, text } or { ok: false, status, message, http }).
async function ask(c) {
  let res;
  if (c.import_session) {
    const bytes = fs.readFileSync(path.join(dir, "other.session"));
    res = await fetch(`${server.url}/v1/sessions/import?id=${c.import_session.id}`, {
      method: "POST", headers: { "Content-Type": "application/octet-stream" }, body: bytes,
    });
  } else {
    const { endpoint, bytes } = httpRequest(expand(c.request));
    res = await fetch(server.url + endpoint, { method: "POST", headers: { "Content-Type": "application/json" }, body: bytes });
  }
  const j = await res.json();
  if (res.status === 200 && !j.error) {
    const choice = j.choices ? j.choices[0] : null;
    return { ok: true, text: choice ? (choice.message ? choice.message.content : choice.text) : "" };
  }
  const code = j.error.code;
  const status = Object.keys(httpOf).find((s) => httpOf[s].status === res.status && httpOf[s].codes.includes(code)) ||
                 `HTTP ${res.status} ${code}`;
  return { ok: false, status, message: j.error.message, http: res.status };
}

test("the C runner answers the table as it says (good cases answered, bad ones refused as listed)", () => {
  const problems = [];
  for (const c of cases("c")) {
    const a = capi.get(c.name);
    if (!a) problems.push(`${c.name}: no answer from parity_capi`);
    else if (c.good && !a.ok) problems.push(`${c.name}: refused by the C ABI: ${a.status} ${a.message}`);
    else if (!c.good) problems.push(...compareBad(c, "c", a, null).map((p) => `${c.name}: ${p}`));
    // The field the case sets takes effect (else a face that dropped it would still match).
    if (c.differs_from && a && a.ok && capi.get(c.differs_from).text === a.text) {
      problems.push(`${c.name}: the same text as "${c.differs_from}" (${JSON.stringify(a.text)})`);
    }
  }
  assert.deepEqual(problems, []);
});

test("good requests: the same text through HTTP as through the C ABI", async () => {
  const problems = [];
  for (const c of list.filter((c) => c.good)) {
    const a = await ask(c);
    const ref = capi.get(c.name);
    if (!a.ok) problems.push(`${c.name}: refused over HTTP: ${a.status} ${a.message}`);
    else if (!ref) problems.push(`${c.name}: no C ABI answer to compare with`);
    else if (a.text !== ref.text) problems.push(`${c.name}: ${JSON.stringify(a.text)} over HTTP, ${JSON.stringify(ref.text)} through the C ABI`);
  }
  assert.deepEqual(problems, []);
  assert.ok(list.filter((c) => c.good).length >= 16, "every good case runs over HTTP");
});

test("bad requests: the same status (400 + OpenAI code) and the C ABI's message", async () => {
  const problems = [];
  for (const c of list.filter((c) => !c.good)) {
    for (const p of compareBad(c, "http", await ask(c), capi.get(c.name))) problems.push(`${c.name}: ${p}`);
  }
  assert.deepEqual(problems, []);
});
