'use strict';
// The face-parity table (tests/parity/cases.json) through the addon, compared with the C ABI's
// answers (tests/parity/parity_capi.c of the same build, run on the same cases): the same text
// for every good request, and for every bad one the same status (Error.code) and the C ABI's
// message word for word. A case NAPI cannot express is left out ('faces': token-id input); a
// case where NAPI answers differently is recorded in the table ('differs') and checked as
// recorded. The shared half (cases, the C runner, the comparison) is tests/parity/parity.mjs.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const edgellm = require('..');
const h = require('./helpers');

// The C runner beside the CLI of the same build (CMake puts it in <build>/tests/).
const capiBin = process.env.EDGELLM_PARITY_CAPI || path.join(path.dirname(h.cli), 'tests', 'parity_capi');

let parity;  // tests/parity/parity.mjs (ESM)
let model;
let dir;
let capi;
let list;
let foreignBytes;  // a session kept by a tiny-zh-poems runtime

// A session of another model, as bytes: generated and exported through the addon.
async function foreignSession(id) {
  const other = await edgellm.load(h.zhPoems, { kvType: 'f32' });
  try {
    await other.generate('春', { maxTokens: 2, temperature: 0, sessionId: id }).result;
    const bytes = await other.exportSession(id);
    assert.ok(bytes && bytes.byteLength > 0);
    return Buffer.from(bytes);
  } finally {
    await other.release();
  }
}

test.before(async () => {
  parity = await import(path.join(h.root, 'tests', 'parity', 'parity.mjs'));
  list = parity.cases('napi');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgellm-napi-parity-'));
  const sessionFiles = {};
  for (const c of parity.cases('c').filter((c) => c.import_session)) {
    foreignBytes = await foreignSession(c.import_session.id);
    sessionFiles[c.name] = path.join(dir, 'other.session');
    fs.writeFileSync(sessionFiles[c.name], foreignBytes);
  }
  capi = parity.runCapi(capiBin, parity.cases('c'), sessionFiles);
  const rt = parity.table.runtime;
  model = await edgellm.load(parity.modelPath(parity.table.model), {
    contextSize: rt.n_ctx, parallel: rt.n_parallel, maxQueued: rt.max_queued, kvType: 'f32',
  });
});
test.after(async () => {
  if (model) await model.release();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// The case's request as generate(input, options).
function napiRequest(r) {
  // Messages in NAPI's shape: an assistant turn's OpenAI tool_calls as toolCalls
  // [{ id, name, arguments }], a tool turn's tool_call_id as toolCallId.
  const toNapi = (m) => {
    const out = { role: m.role, content: m.content };
    if (m.tool_calls !== undefined) {
      out.toolCalls = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
    }
    if (m.tool_call_id !== undefined) out.toolCallId = m.tool_call_id;
    return out;
  };
  const input = r.messages !== undefined ? r.messages.map(toNapi) : r.prompt;
  const options = {};
  const names = {
    max_tokens: 'maxTokens', temperature: 'temperature', top_k: 'topK', top_p: 'topP', min_p: 'minP',
    repeat_penalty: 'repeatPenalty', frequency_penalty: 'frequencyPenalty', presence_penalty: 'presencePenalty',
    penalty_last_n: 'penaltyLastN', seed: 'seed', stop: 'stop', n_keep: 'nKeep', session_id: 'sessionId',
  };
  for (const [k, js] of Object.entries(names)) if (r[k] !== undefined) options[js] = r[k];
  if (r.logit_bias !== undefined) options.logitBias = r.logit_bias.map(([token, bias]) => ({ token, bias }));
  // Priority: the names for the C ABI's 0 / 1, any other number as it is (the Runtime refuses it).
  if (r.priority !== undefined) options.priority = ['interactive', 'background'][r.priority] ?? r.priority;
  if (r.add_special !== undefined) options.addSpecial = r.add_special;
  if (r.parse_special !== undefined) options.parseSpecial = r.parse_special;
  return { input, options };
}

// One case through the addon: { ok, text } or { ok: false, status, message }.
async function ask(c) {
  try {
    if (c.import_session) {
      await model.importSession(c.import_session.id, foreignBytes);
      return { ok: true, text: '' };
    }
    const { input, options } = napiRequest(parity.expand(c.request));
    const result = await model.generate(input, options).result;
    return { ok: true, text: result.text };
  } catch (e) {
    return { ok: false, status: String(e.code).toLowerCase(), message: e.message };
  }
}

test('good requests: the same text through NAPI as through the C ABI', async () => {
  const problems = [];
  const good = list.filter((c) => c.good);
  for (const c of good) {
    const a = await ask(c);
    const ref = capi.get(c.name);
    if (!a.ok) problems.push(`${c.name}: refused through NAPI: ${a.status} ${a.message}`);
    else if (!ref || !ref.ok) problems.push(`${c.name}: no C ABI answer to compare with`);
    else if (a.text !== ref.text) problems.push(`${c.name}: ${JSON.stringify(a.text)} through NAPI, ${JSON.stringify(ref.text)} through the C ABI`);
  }
  assert.deepEqual(problems, []);
  assert.ok(good.length >= 15, 'the good cases run through NAPI');
});

test('bad requests: the same status (Error.code) and the C ABI\'s message', async () => {
  const problems = [];
  for (const c of list.filter((c) => !c.good)) {
    for (const p of parity.compareBad(c, 'napi', await ask(c), capi.get(c.name))) problems.push(`${c.name}: ${p}`);
  }
  assert.deepEqual(problems, []);
});
