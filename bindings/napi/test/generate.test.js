'use strict';
// Generation through the addon against independent references: the CLI's greedy output (same
// library, a different driver: no service, no addon) and the llama.cpp-produced Chinese reference.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const edgellm = require('..');
const h = require('./helpers');

test('stories260K: greedy stream equals the CLI byte for byte', async () => {
  const m = await edgellm.load(h.stories);
  try {
    for (const [prompt, n] of [['Once upon a time', 64], ['The little dog', 120]]) {
      const { pieces, result, late } = await h.stream(m, prompt, { temperature: 0, maxTokens: n });
      const expected = h.cliGreedy(h.stories, prompt, n);
      assert.ok(pieces.length > 5, 'streamed piece by piece');
      assert.ok(pieces.every((p) => typeof p === 'string' && p.length > 0));
      assert.deepEqual(Buffer.from(pieces.join(''), 'utf8'), expected);
      assert.equal(result.text, pieces.join(''));
      assert.equal(late, 0, 'no onToken after the result settled');
      assert.ok(['stop', 'length'].includes(result.finishReason));
      assert.ok(result.completionTokens > 0 && result.completionTokens <= n);
      assert.ok(result.promptTokens > 0);
      assert.ok(result.timings.ttftMs > 0 && result.peakRssBytes > 0);
    }
  } finally {
    await m.release();
  }
});

// Waits (with a deadline) until the paused service's scheduler has seen the pause: from then on
// no step runs until resume().
async function pausedIdle(m) {
  const deadline = Date.now() + 10000;
  while (!m.metrics().pausedIdle) {
    assert.ok(Date.now() < deadline, 'the scheduler never reported paused_idle');
    await h.sleep(1);
  }
}

test('two concurrent generations on one model each equal their solo CLI output', async () => {
  const m = await edgellm.load(h.stories, { parallel: 2 });
  try {
    // Both are queued while paused, so one admission pass takes both and they decode side by
    // side: maxDecodeBatch shows they overlapped (a scheduler serving one request at a time
    // would leave it at 1).
    m.pause();
    const a = h.stream(m, 'Once upon a time', { temperature: 0, maxTokens: 100 });
    const b = h.stream(m, 'Tom had a red ball', { temperature: 0, maxTokens: 100 });
    m.resume();
    const [ra, rb] = await Promise.all([a, b]);
    assert.notEqual(ra.id, rb.id);
    assert.deepEqual(Buffer.from(ra.pieces.join('')), h.cliGreedy(h.stories, 'Once upon a time', 100));
    assert.deepEqual(Buffer.from(rb.pieces.join('')), h.cliGreedy(h.stories, 'Tom had a red ball', 100));
    assert.equal(ra.result.text, ra.pieces.join(''));
    assert.equal(rb.result.text, rb.pieces.join(''));
    const metrics = m.metrics();
    assert.equal(metrics.requestsFinished, 2);
    assert.equal(metrics.running, 0);
    assert.equal(metrics.maxDecodeBatch, 2, 'the two requests were decoded in the same steps');
  } finally {
    await m.release();
  }
});

// Long requests (the whole 4096-position context, ~200 ms of decoding here) so that the first
// piece reaches JS long before the request could end on its own, even on a loaded machine.
const LONG = { temperature: 0, maxTokens: -1, ignoreEos: true };

test('cancel mid-stream: the result resolves cancelled with exactly the streamed text', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 4096 });
  try {
    const pieces = [];
    const g = m.generate('Once upon a time', LONG, (p) => {
      pieces.push(p);
      if (pieces.length === 1) g.cancel();
    });
    const r = await g.result;
    assert.equal(r.finishReason, 'cancelled');
    assert.equal(r.text, pieces.join(''));
    assert.ok(r.completionTokens >= 1 && r.completionTokens < 4000, `${r.completionTokens} tokens`);
    g.cancel();  // after the end: nothing happens
  } finally {
    await m.release();
  }
});

test('an exception in onToken cancels the request and rejects the result with it', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 4096 });
  try {
    let calls = 0;
    const g = m.generate('Once upon a time', LONG, () => {
      calls++;
      throw new RangeError('stop here');
    });
    const e = await h.rejection(g.result);
    assert.ok(e instanceof RangeError && e.message === 'stop here');
    assert.equal(calls, 1, 'no onToken after it threw');
    assert.equal(m.metrics().cancellations, 1);
  } finally {
    await m.release();
  }
});

test('BUSY when the queue is full', async () => {
  const m = await edgellm.load(h.stories, { parallel: 1, maxQueued: 0 });
  try {
    m.pause();  // the first request cannot finish before the second is submitted
    const first = m.generate('Once upon a time', { temperature: 0, maxTokens: 50 });
    const second = m.generate('Once upon a time', { temperature: 0, maxTokens: 50 });
    const e = await h.rejection(second.result);
    assert.equal(e.code, 'BUSY');
    assert.equal(second.id, 0);
    assert.ok(first.id > 0);
    m.resume();
    const r = await first.result;
    assert.equal(r.finishReason, 'length');
    assert.equal(m.metrics().busyRejections, 1);
  } finally {
    await m.release();
  }
});

test('a deadline ends the request with timeout (paused: no step can finish it first)', async () => {
  const m = await edgellm.load(h.stories);
  try {
    m.pause();
    const pieces = [];
    const g = m.generate('Once upon a time', { temperature: 0, maxTokens: 50, deadlineMs: 50 }, (p) => pieces.push(p));
    const r = await g.result;
    assert.equal(r.finishReason, 'timeout');
    assert.equal(r.text, pieces.join(''));
    m.resume();
  } finally {
    await m.release();
  }
});

test('pause holds the stream, resume continues it unchanged', async () => {
  const m = await edgellm.load(h.stories);
  try {
    m.pause();
    assert.equal(m.metrics().paused, true);
    const pieces = [];
    const g = m.generate('Once upon a time', { temperature: 0, maxTokens: 64 }, (p) => pieces.push(p));
    await pausedIdle(m);
    const held = m.metrics();
    assert.equal(held.steps, 0, 'nothing ran while paused');
    assert.equal(held.waiting + held.running, 1);
    assert.equal(pieces.length, 0);
    m.resume();
    const r = await g.result;
    assert.deepEqual(Buffer.from(r.text), h.cliGreedy(h.stories, 'Once upon a time', 64));
    const w = await m.warmup();
    assert.equal(typeof w.ran, 'boolean');
    assert.equal(typeof w.reason, 'string');
    assert.ok(w.ran || w.reason.length > 0, 'a skipped warm-up says why');
    const released = await m.trim();
    assert.ok(Number.isInteger(released) && released >= 0);
  } finally {
    await m.release();
  }
});

test('tokenize / detokenize round trip, info and metrics', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 256 });
  try {
    const ids = m.tokenize('Once upon a time', { addBos: false });
    assert.ok(ids.length > 0 && ids.every(Number.isInteger));
    assert.equal(m.detokenize(ids), 'Once upon a time');
    const withBos = m.tokenize('Once upon a time');
    assert.equal(withBos.length, ids.length + 1);
    assert.equal(m.detokenize(withBos), 'Once upon a time');
    assert.equal(m.detokenize(withBos, { renderSpecial: true }), '<s>Once upon a time');  // stories260K's BOS
    assert.equal(edgellm.abiVersion(), 5);
    assert.match(edgellm.version(), /^\d+\.\d+\.\d+$/);
    const info = m.info();
    assert.equal(info.architecture, 'llama');
    assert.equal(info.n_ctx, 256);
    // index.d.ts's ModelInfo names exactly the fields info() has.
    const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
    const body = dts.slice(dts.indexOf('export interface ModelInfo {'));
    const declared = [...body.slice(0, body.indexOf('\n}')).matchAll(/^  (\w+):/gm)].map((x) => x[1]);
    assert.deepEqual(declared.sort(), Object.keys(info).sort());
    // The same for Metrics (every field of edgellm_metrics, by its camelCase name).
    const metrics = m.metrics();
    const mbody = dts.slice(dts.indexOf('export interface Metrics {'));
    const mdeclared = [...mbody.slice(0, mbody.indexOf('\n}')).matchAll(/^  (\w+):/gm)].map((x) => x[1]);
    assert.deepEqual(mdeclared.sort(), Object.keys(metrics).sort());
    assert.equal(typeof metrics.kvBlocksTotal, 'number');
    // Threads: info() and metrics() report the counts the runtime runs with.
    assert.ok(info.n_threads >= 1 && info.n_threads_batch >= 1);
    assert.equal(metrics.threads, info.n_threads);
    assert.equal(metrics.batchThreads, info.n_threads_batch);
    assert.equal(info.model_version, '1');
    assert.equal(info.input_policy, 'refuse');
  } finally {
    await m.release();
  }
});

test('K and V cache types apart (kvType, kvTypeV) reach the service', async () => {
  const m = await edgellm.load(h.zhPoems, { contextSize: 64, parallel: 1, kvType: 'q8_0', kvTypeV: 'q4_0' });
  try {
    const info = m.info();
    assert.equal(info.kv_type, 'q8_0');
    assert.equal(info.kv_type_v, 'q4_0');
    assert.equal(info.memory.kv_type_v, 'q4_0');
  } finally {
    await m.release();
  }
});

test('Chinese prompt on tiny-zh-poems streams whole characters (no U+FFFD) equal to the reference', async () => {
  const refs = fs.readFileSync(path.join(h.testdata, 'testdata', 'reference', 'tiny-zh-poems-greedy.jsonl'), 'utf8')
    .split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const m = await edgellm.load(h.zhPoems, { contextSize: 256 });
  try {
    for (const ref of refs.slice(0, 2)) {
      const { pieces, result } = await h.stream(m, ref.prompt, { temperature: 0, maxTokens: 100 });
      for (const p of pieces) assert.ok(!p.includes('\uFFFD'), `piece ${JSON.stringify(p)}`);
      assert.equal(pieces.join(''), result.text);
      assert.equal(result.text, ref.output_text);
      assert.deepEqual(Buffer.from(result.text), h.cliGreedy(h.zhPoems, ref.prompt, 100));
    }
  } finally {
    await m.release();
  }
});

test('speculation: greedy with n-gram drafts equals greedy without, and reports its stats', async () => {
  const m = await edgellm.load(h.stories, { kvType: 'f32' });
  try {
    const prompt = 'The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog';
    const opts = { temperature: 0, maxTokens: 48, ignoreEos: true };
    const plain = await m.generate(prompt, opts).result;
    const spec = await m.generate(prompt, { ...opts, speculation: 'ngram', draftMax: 4 }).result;
    assert.equal(spec.text, plain.text);
    assert.equal(spec.completionTokens, plain.completionTokens);
    const s = spec.speculation;
    assert.ok(s.drafted > 0, 'drafts were verified');
    assert.ok(s.accepted <= s.drafted);
    assert.equal(s.forwardTokens, s.forwards + s.accepted);
    assert.equal(s.forwardTokens, spec.completionTokens - 1);  // the first token came from the prefill
    assert.equal(s.offReason, '');
    assert.equal(plain.speculation.drafted, 0);
    assert.equal(plain.speculation.tokensPerForward, 1);
    const grammar = await m.generate(prompt, { ...opts, maxTokens: 8, speculation: 'ngram', jsonObject: true }).result;
    assert.match(grammar.speculation.offReason, /grammar/);
    await assert.rejects(m.generate(prompt, { ...opts, speculation: 'draft' }).result,
      (e) => e.code === 'INVALID_ARGUMENT' && /draft model/.test(e.message));
    await assert.rejects(m.generate(prompt, { ...opts, speculation: 'ngram', draftMax: 9 }).result,
      (e) => e.code === 'INVALID_ARGUMENT' && /draft_max/.test(e.message));
    await assert.rejects(m.generate(prompt, { ...opts, speculation: 'medusa' }).result,
      (e) => e.code === 'INVALID_ARGUMENT' && /speculation/.test(e.message));
  } finally {
    await m.release();
  }
});

test('speculation with a draft model (load option draftModel): greedy equals greedy without', async () => {
  // stories260K drafting for itself: every draft is the model's own greedy pick.
  const m = await edgellm.load(h.stories, { kvType: 'f32', draftModel: h.stories, parallel: 2 });
  try {
    const prompt = 'Once upon a time';
    const opts = { temperature: 0, maxTokens: 40, ignoreEos: true };
    const plain = await m.generate(prompt, opts).result;
    const both = await Promise.all([0, 1].map(() => m.generate(prompt, { ...opts, speculation: 'draft', draftMax: 4 }).result));
    for (const spec of both) {
      assert.equal(spec.text, plain.text);
      const s = spec.speculation;
      assert.ok(s.drafted > 0, 'drafts were verified');
      assert.equal(s.accepted, s.drafted);  // it drafts for itself
      assert.ok(s.tokensPerForward > 1.5, `${s.tokensPerForward} tokens per forward`);
    }
  } finally {
    await m.release();
  }
  await assert.rejects(edgellm.load(h.stories, { draftModel: h.zhPoems }), (e) => /vocabulary/.test(e.message));
  await assert.rejects(edgellm.load(h.stories, { draftModel: 7 }), (e) => /draftModel/.test(e.message));
});
