'use strict';
// The rest of the runtime through the addon, each against an independent reference:
//   sessions   a conversation exported as an ArrayBuffer from one model and imported into a
//              second continues there exactly as a third model that prefills all of it;
//   registry   install (copied and moved), verify, load by name, update + reloadRegistry, roll
//              back with registrySetCurrent, remove; each version's text equals the CLI's on its
//              file;
//   swapModel  results name the version; a bad file changes nothing;
//   pressure   setPressure moves the ladder until requests are refused with DEGRADED, and back;
//   plan       the planner's choice for a phone profile;
//   requests   logitBias (a forced token equals its detokenized repetition; a banned first
//              token is not the reference's), inputPolicy 'strip' (equals the clean prompt),
//              role 'tool' with the call it answers (applyTemplate renders it), contextShift (past the context).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const edgellm = require('..');
const h = require('./helpers');

const STORIES_SHA256 = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d';
const GREEDY = { temperature: 0, maxTokens: 16, ignoreEos: true };

function tmpdir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// Polls fn() until it returns true, at most `ms` (the state it reads is the runtime's own).
async function until(fn, ms, what) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await h.sleep(10);
  }
}

test('sessions: exported from one model, imported into a second, continue as a full prefill', async () => {
  const opts = { contextSize: 256, parallel: 1 };
  const [a, b, c] = await Promise.all([edgellm.load(h.stories, opts), edgellm.load(h.stories, opts),
    edgellm.load(h.stories, opts)]);
  const dir = tmpdir('edgellm-sessions-');
  try {
    const turn1 = [{ role: 'user', content: 'Tell me a story about a cat.' }];
    const r1 = await a.generate(turn1, { ...GREEDY, sessionId: 'chat' }).result;
    assert.equal(r1.sessionStored, true);
    assert.equal(r1.sessionSaveError, null);
    assert.equal(r1.route, null);
    const bytes = await a.exportSession('chat');
    assert.ok(bytes instanceof ArrayBuffer && bytes.byteLength > 64, 'an ArrayBuffer');
    assert.equal(await a.exportSession('nothing'), null);
    const listed = a.listSessions();
    assert.deepEqual(listed.sessions, [{ id: 'chat', bytes: bytes.byteLength }]);
    assert.equal(a.metrics().sessions, 1);
    assert.equal(a.metrics().sessionBytes, bytes.byteLength);

    // Imported from a typed array view (its own range of a larger buffer).
    const padded = new Uint8Array(bytes.byteLength + 16);
    padded.set(new Uint8Array(bytes), 8);
    const positions = await b.importSession('moved', padded.subarray(8, 8 + bytes.byteLength));
    assert.ok(positions > 0);
    const turn2 = [...turn1, { role: 'assistant', content: r1.text }, { role: 'user', content: 'What happened next?' }];
    const continued = await b.generate(turn2, { ...GREEDY, sessionId: 'moved' }).result;
    const full = await c.generate(turn2, GREEDY).result;
    assert.equal(full.cachedTokens, 0);
    assert.ok(continued.cachedTokens > 0 && continued.cachedTokens <= positions,
      `restored ${continued.cachedTokens} of ${positions} positions`);
    assert.equal(continued.text, full.text, 'the moved conversation answers as a full prefill');

    // Files: save from b, load into c, continue; a save path on the request; a missing file.
    const file = path.join(dir, 'moved.kvs');
    assert.equal(await b.saveSessionFile('moved', file), true);
    assert.equal(await b.saveSessionFile('nothing', file), false);
    assert.ok((await c.loadSessionFile('restored', file)) > positions);
    const saved = path.join(dir, 'request.kvs');
    const r3 = await c.generate(turn1, { ...GREEDY, sessionSavePath: saved }).result;
    assert.equal(r3.sessionSaveError, null);
    assert.ok(fs.statSync(saved).size > 64);
    const r4 = await c.generate(turn1, { ...GREEDY, sessionSavePath: path.join(dir, 'no', 'such', 'x.kvs') }).result;
    assert.equal(r4.sessionSaveError, 'IO');
    const fromFile = await a.generate(turn1, { ...GREEDY, sessionLoadPath: saved }).result;
    assert.equal(fromFile.text, r1.text);
    assert.ok(fromFile.cachedTokens > 0);
    assert.equal((await h.rejection(c.loadSessionFile('x', path.join(dir, 'missing.kvs')))).code, 'IO');
    assert.equal((await h.rejection(a.generate(turn1, { sessionLoadPath: path.join(dir, 'missing.kvs') }).result)).code, 'IO');

    // Delete; another model's session is refused.
    assert.equal(b.deleteSession('moved'), true);
    assert.equal(b.deleteSession('moved'), false);
    assert.equal(await b.exportSession('moved'), null);
    const zh = await edgellm.load(h.zhPoems, opts);
    try {
      assert.equal((await h.rejection(zh.importSession('x', bytes))).code, 'INVALID_ARGUMENT');
    } finally {
      await zh.release();
    }
  } finally {
    await Promise.all([a.release(), b.release(), c.release()]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('registry: install, verify, load by name, update, roll back, remove', async () => {
  const reg = tmpdir('edgellm-registry-');
  try {
    const m1 = await edgellm.registryInstall(reg, h.stories, { name: 'tiny', version: 'v1', sha256: STORIES_SHA256 });
    assert.equal(m1.sha256, STORIES_SHA256);
    assert.equal(m1.version, 'v1');
    assert.equal((await h.rejection(edgellm.registryInstall(reg, h.zhPoems,
      { name: 'tiny', version: 'v2', sha256: 'b'.repeat(64) }))).code, 'INVALID_FILE');
    assert.equal((await h.rejection(edgellm.registryInstall(reg, h.zhPoems, { name: 'tiny' }))).code, 'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.registryInstall(7, h.zhPoems, { name: 'a', version: 'b' }))).code,
      'INVALID_ARGUMENT');
    assert.equal((await h.rejection(edgellm.registryResolve(reg, 'nothing'))).code, 'NOT_FOUND');
    const p1 = await edgellm.registryResolve(reg, 'tiny');
    assert.ok(p1.endsWith('tiny@v1.gguf'), p1);

    const m = await edgellm.load('tiny', { registryDir: reg });
    try {
      const refStories = h.cliGreedy(h.stories, 'Once upon a time', 16).toString();
      const refZh = h.cliGreedy(h.zhPoems, 'Once upon a time', 16).toString();
      const gen = async () => m.generate('Once upon a time', { temperature: 0, maxTokens: 16 }).result;
      let r = await gen();
      assert.equal(r.modelVersion, 'v1');
      assert.equal(r.text, refStories);
      assert.equal(await m.reloadRegistry(), 'v1');  // nothing new

      // An update the app downloaded: installed by moving the file, then reloaded.
      const downloaded = path.join(reg, '..', `${path.basename(reg)}-download.gguf`);
      fs.copyFileSync(h.zhPoems, downloaded);
      const m2 = await edgellm.registryInstall(reg, downloaded, { name: 'tiny', version: 'v2', move: true });
      assert.equal(fs.existsSync(downloaded), false, 'moved, not copied');
      assert.equal(m2.version, 'v2');
      assert.equal(await m.reloadRegistry(), 'v2');
      r = await gen();
      assert.equal(r.modelVersion, 'v2');
      assert.equal(r.text, refZh);
      assert.equal(m.info().model_version, 'v2');

      // Roll back; the current version cannot be removed, the other can.
      await edgellm.registrySetCurrent(reg, 'tiny', 'v1');
      assert.equal(await m.reloadRegistry(), 'v1');
      r = await gen();
      assert.equal(r.modelVersion, 'v1');
      assert.equal(r.text, refStories);
      const listing = await edgellm.registryList(reg);
      assert.deepEqual(listing.models.map((x) => [x.version, x.current]), [['v1', true], ['v2', false]]);
      assert.equal((await h.rejection(edgellm.registryRemove(reg, 'tiny', 'v1'))).code, 'INVALID_ARGUMENT');
      assert.equal((await h.rejection(edgellm.registrySetCurrent(reg, 'tiny', 'v9'))).code, 'NOT_FOUND');
      await edgellm.registryRemove(reg, 'tiny', 'v2');
      assert.equal((await h.rejection(edgellm.registryRemove(reg, 'tiny', 'v2'))).code, 'NOT_FOUND');
      assert.equal(m.metrics().modelSwaps, 2);
    } finally {
      await m.release();
    }
  } finally {
    fs.rmSync(reg, { recursive: true, force: true });
  }
});

test('swapModel: results name their version; a bad file changes nothing', async () => {
  const m = await edgellm.load(h.stories);
  try {
    const gen = async () => m.generate('Once upon a time', { temperature: 0, maxTokens: 12 }).result;
    const before = await gen();
    assert.equal(before.modelVersion, '1');
    assert.equal((await h.rejection(m.swapModel('/no/such/model.gguf', '2'))).code, 'IO');
    assert.equal((await h.rejection(m.swapModel(h.zhPoems, ''))).code, 'INVALID_ARGUMENT');
    const still = await gen();
    assert.equal(still.modelVersion, '1');
    assert.equal(still.text, before.text);
    await m.swapModel(h.zhPoems, 'poems-2');
    const after = await gen();
    assert.equal(after.modelVersion, 'poems-2');
    assert.equal(after.text, h.cliGreedy(h.zhPoems, 'Once upon a time', 12).toString());
    assert.equal(m.metrics().modelSwaps, 1);
    assert.equal(m.metricsJson().model_version, 'poems-2');
  } finally {
    await m.release();
  }
});

test('release() while a swap loads waits for it; calls after it reject with SHUT_DOWN', async () => {
  const m = await edgellm.load(h.stories);
  const swap = m.swapModel(h.zhPoems, 'late');  // on a worker thread, holding the runtime
  const released = m.release();                  // the destroy waits for the swap's hold
  assert.equal((await h.rejection(m.swapModel(h.zhPoems, 'later'))).code, 'SHUT_DOWN');
  await Promise.all([swap, released]);
});

test('setPressure: the ladder steps down to refusing (DEGRADED) and back up', async () => {
  const m = await edgellm.load(h.zhPoems, { recoverMs: 50 });
  try {
    await m.setFallbackModel(h.stories, 'small');
    assert.equal((await h.rejection(m.setFallbackModel('/no/such.gguf', 'x'))).code, 'IO');
    assert.equal(m.degradation().applied_rung, 'normal');
    m.setPressure({ memoryLevel: 3 });
    await until(() => m.degradation().applied_rung === 'refuse_new', 30000, 'the refuse_new rung');
    const e = await h.rejection(m.generate('Once upon a time', GREEDY).result);
    assert.equal(e.code, 'DEGRADED');
    assert.match(e.message, /memory pressure critical/);
    const d = m.degradation();
    assert.equal(d.model_version, 'small');  // the smaller-model rung on the way down
    assert.ok(d.rungs.smaller_model.entered >= 1);
    const metrics = m.metrics();
    assert.equal(metrics.degradationRung, 5);
    assert.ok(metrics.degradedRefusals >= 1);
    assert.match(m.metricsPrometheus(), /edgellm_degradation_rung 5/);
    m.setPressure({});  // the whole picture: no pressure
    await until(() => m.degradation().applied_rung === 'normal', 30000, 'the normal rung');
    const r = await m.generate('Once upon a time', { temperature: 0, maxTokens: 12 }).result;
    assert.equal(r.modelVersion, '1');
  } finally {
    await m.release();
  }
});

test('plan: the choice for a phone profile; bad requests reject', async () => {
  const p = await edgellm.plan({ device: 'phone-4gb', models: [h.stories, h.zhPoems], max_ctx: 2048, min_ctx: 256,
    power_mode: 'efficiency' });
  assert.equal(p.choice.model, h.zhPoems);
  assert.equal(p.threads.decode_on_efficiency_cores, true);
  assert.equal(p.considered.length, 2);
  for (const bad of [{}, { models: [1] }, { models: ['x'], power_mode: 'turbo' }]) {
    assert.equal((await h.rejection(edgellm.plan(bad))).code, 'INVALID_ARGUMENT', JSON.stringify(bad));
  }
  assert.equal((await h.rejection(edgellm.plan('phone'))).code, 'INVALID_ARGUMENT');
});

test('requests: logitBias, inputPolicy strip, role tool, contextShift', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 256, inputPolicy: 'strip' });
  try {
    // A token forced by a large bias: greedy repeats it; the reference is detokenize.
    const [cat] = m.tokenize(' cat', { addBos: false }).slice(-1);
    const forced = await m.generate('Once upon a time', { ...GREEDY, maxTokens: 5, logitBias: [{ token: cat, bias: 100 }] })
      .result;
    assert.equal(forced.text, m.detokenize([cat, cat, cat, cat, cat]));
    // The reference's first token banned: the answer starts otherwise. The first piece streamed
    // is that token's text: every id of the vocabulary with that text is banned.
    const ref = await h.stream(m, 'Once upon a time', GREEDY);
    const ids = [];
    for (let id = 0; id < m.info().n_vocab; id++) {
      if (m.detokenize([id]) === ref.pieces[0]) ids.push(id);
    }
    assert.ok(ids.length >= 1, JSON.stringify(ref.pieces[0]));
    const ban = ids.map((token) => ({ token, bias: -Infinity }));
    const banned = await h.stream(m, 'Once upon a time', { ...GREEDY, logitBias: ban });
    assert.notEqual(banned.pieces[0], ref.pieces[0]);
    assert.notEqual(banned.result.text, ref.result.text);

    // Strip: the control character and the invalid byte's replacement are counted, and the
    // answer is that of the clean prompt.
    const clean = await m.generate('Once upon a time', GREEDY).result;
    const stripped = await m.generate('Once upon\u0007 a time', GREEDY).result;
    assert.equal(stripped.sanitizedChars, 1);
    assert.equal(stripped.text, clean.text);
    assert.equal(m.info().input_policy, 'strip');

    // Role tool: rendered by the template, accepted by generate (a tool turn answers a call an
    // earlier assistant turn made, by its id; one that answers none is refused).
    const chat = [{ role: 'user', content: 'What is the weather?' },
      { role: 'assistant', content: 'Let me check.', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city": "Oslo"}' }] },
      { role: 'tool', toolCallId: 'call_1', content: 'sunny-tool-result' }];
    assert.throws(() => m.applyTemplate([chat[0], { role: 'tool', content: 'sunny' }]),
      { code: 'INVALID_ARGUMENT', message: 'messages[1]: a tool turn needs tool_call_id (the id of the call whose result it carries)' });
    const rendered = m.applyTemplate(chat);
    assert.match(rendered, /tool\nsunny-tool-result/);
    // Without the generation prompt: the same text up to the assistant's opening.
    const closed = m.applyTemplate(chat, { addGenerationPrompt: false });
    assert.ok(rendered.startsWith(closed) && rendered.length > closed.length, JSON.stringify([rendered, closed]));
    const toolAnswer = await m.generate(chat, GREEDY).result;
    assert.equal(toolAnswer.completionTokens, 16);

    // An endless stream: past the 256-position context with contextShift, LENGTH without.
    const shifted = await m.generate('Once upon a time', { temperature: 0, maxTokens: 400, ignoreEos: true, contextShift: true,
      nKeep: 1, deadlineMs: 0 }).result;
    assert.equal(shifted.finishReason, 'length');
    assert.equal(shifted.completionTokens, 400);
    const bounded = await m.generate('Once upon a time', { temperature: 0, maxTokens: 400, ignoreEos: true, deadlineMs: 0 })
      .result;
    assert.ok(bounded.completionTokens < 256, `${bounded.completionTokens} tokens`);
    assert.ok(shifted.text.startsWith(bounded.text), 'the same stream up to the first shift');
  } finally {
    await m.release();
  }
});
