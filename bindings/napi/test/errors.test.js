'use strict';
// Errors: Error objects whose `code` is the C ABI status name. load rejects, generate's result
// rejects, synchronous calls throw; after release every use fails with SHUT_DOWN.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const edgellm = require('..');
const h = require('./helpers');

async function loadError(...args) {
  const e = await h.rejection(edgellm.load(...args));
  assert.ok(e instanceof Error, 'an Error object');
  return e;
}

test('load rejects: missing file, truncated GGUF, not a GGUF, bad options', async () => {
  assert.equal((await loadError(path.join(os.tmpdir(), 'no-such-model.gguf'))).code, 'IO');

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgellm-napi-'));
  try {
    const whole = fs.readFileSync(h.stories);
    const truncated = path.join(dir, 'truncated.gguf');
    fs.writeFileSync(truncated, whole.subarray(0, Math.floor(whole.length / 2)));
    assert.equal((await loadError(truncated)).code, 'INVALID_FILE');
    const garbage = path.join(dir, 'garbage.gguf');
    fs.writeFileSync(garbage, Buffer.from('definitely not a GGUF file'));
    assert.equal((await loadError(garbage)).code, 'INVALID_FILE');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  for (const [p, o] of [[42, undefined], [h.stories, 'fast'], [h.stories, { contextSize: 'big' }],
    [h.stories, { contextSize: 1.5 }], [h.stories, { kvType: 'f8' }], [h.stories, { threads: -3 }],
    [h.stories, { kvTypeV: 'q4_1' }],
    [h.stories, { powerMode: 'turbo' }], [h.stories, { chatTemplate: 7 }], [h.stories, { parallel: 0 }],
    [h.stories, { inputPolicy: 'clean' }], [h.stories, { modelVersion: '' }], [h.stories, { maxSessions: -1 }],
    [h.stories, { recoverMs: -5 }], [h.stories, { kvBudgetFraction: 2 }], [h.stories, { registryDir: 5 }],
    [h.stories, { linuxPressure: 'yes' }], [h.stories, { maxSessionBytes: -1 }],
    ['nothing', { registryDir: os.tmpdir() }]]) {
    const e = await loadError(p, o);
    assert.equal(e.code, 'INVALID_ARGUMENT', `${JSON.stringify(o)}: ${e.message}`);
  }
});

test('an options getter that throws: load and the result reject with that exception', async () => {
  const options = { get contextSize() { throw new TypeError('getter'); }, get temperature() { throw new TypeError('getter'); } };
  const e = await h.rejection(edgellm.load(h.stories, options));
  assert.ok(e instanceof TypeError && e.message === 'getter');
  const m = await edgellm.load(h.stories);
  try {
    const g = m.generate('hi', options);
    const r = await h.rejection(g.result);
    assert.ok(r instanceof TypeError && r.message === 'getter');
  } finally {
    await m.release();
  }
});

test('generate rejects its result: bad input, bad options, a prompt longer than the context', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 32 });
  try {
    const cases = [
      [42, undefined], [{ role: 'user' }, undefined], [[{ role: 'robot', content: 'hi' }], undefined],
      [[{ role: 'user', content: 5 }], undefined], ['hi', { temperature: 'hot' }], ['hi', { temperature: -1 }],
      ['hi', { topK: 2.5 }], ['hi', { stop: [1, 2] }], ['hi', { priority: 'urgent' }], ['hi', 'greedy'],
      ['hi', { seed: -1 }], ['hi', { topP: 7 }], ['hi', { route: 'sky' }], ['hi', { logitBias: { 5: 1 } }],
      ['hi', { logitBias: [{ token: 5 }] }], ['hi', { logitBias: [{ token: 1e9, bias: 1 }] }],
      ['hi', { logitBias: [{ token: 5, bias: 1000 }] }], ['hi', { nKeep: -2 }], ['hi', { sessionId: '' }],
      ['hi', { sessionId: 'a/b' }], ['hi', { sessionId: 5 }], ['hi', { contextShift: 'yes' }],
      ['a\u0007b', undefined], [[{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'x' }], undefined],
    ];
    for (const [input, options] of cases) {
      const g = m.generate(input, options);
      assert.equal(g.id, 0);
      const e = await h.rejection(g.result);
      assert.ok(e instanceof Error);
      assert.equal(e.code, 'INVALID_ARGUMENT', `${JSON.stringify([input, options])}: ${e.message}`);
    }
    const g = m.generate('hi', {}, 'not a function');
    assert.equal((await h.rejection(g.result)).code, 'INVALID_ARGUMENT');

    const long = 'Once upon a time there was a little girl. '.repeat(20);
    const e = await h.rejection(m.generate(long, { maxTokens: 4 }).result);
    assert.equal(e.code, 'CONTEXT_FULL', e.message);
  } finally {
    await m.release();
  }
});

test('synchronous calls throw with codes', async () => {
  const m = await edgellm.load(h.stories);
  try {
    assert.throws(() => m.tokenize(5), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.tokenize('x', { addBos: 'yes' }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.detokenize('1 2 3'), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.detokenize([1, 0.5]), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.detokenize([1, 1e9]), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.metrics.call({}), TypeError);  // V8 checks the receiver first
    assert.throws(() => new edgellm.Model(), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.detokenize([1], { renderSpecial: 1 }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.applyTemplate('hi'), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.applyTemplate([{ role: 'wizard', content: 'hi' }]), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.setPressure({ memoryLevel: 9 }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.setPressure({ memoryLevel: 'high' }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.setPressure('high'), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.setRouter({ localThreshold: 0.5, cloudThreshold: 0.9 }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.setRouter({ transport: 'https://x' }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.setRouter({ cloudTimeoutMs: 0 }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => m.deleteSession(7), { code: 'INVALID_ARGUMENT' });
    assert.equal(m.deleteSession('none-here'), false);
    for (const call of [() => m.swapModel(7, '2'), () => m.swapModel(h.stories, 2), () => m.exportSession(7),
      () => m.importSession('x', 'bytes'), () => m.loadSessionFile('x', 7), () => m.saveSessionFile(7, '/tmp/x'),
      () => m.setFallbackModel(7), () => m.swapModel(h.stories, '')]) {
      assert.equal((await h.rejection(call())).code, 'INVALID_ARGUMENT', call.toString());
    }
    assert.equal((await h.rejection(m.swapModel('/no/such.gguf', '2'))).code, 'IO');
    assert.equal((await h.rejection(m.importSession('x', new ArrayBuffer(8)))).code, 'INVALID_FILE');
    assert.equal((await h.rejection(m.reloadRegistry())).code, 'INVALID_ARGUMENT');  // not from a registry
  } finally {
    await m.release();
  }
});

test('release, then every use is an error; a generation in flight ends cancelled', async () => {
  const m = await edgellm.load(h.stories);
  const pieces = [];
  const g = m.generate('Once upon a time', { temperature: 0, maxTokens: 1500, ignoreEos: true }, (p) => pieces.push(p));
  m.pause();  // still running when release comes
  await m.release();
  const r = await g.result;
  assert.equal(r.finishReason, 'cancelled');
  assert.equal(r.text, pieces.join(''));

  for (const call of [() => m.tokenize('x'), () => m.detokenize([1]), () => m.info(), () => m.metrics(),
    () => m.pause(), () => m.resume(), () => m.applyTemplate([{ role: 'user', content: 'x' }]),
    () => m.metricsJson(), () => m.metricsPrometheus(), () => m.degradation(), () => m.setPressure({}),
    () => m.setRouter({}), () => m.deleteSession('x'), () => m.listSessions()]) {
    assert.throws(call, { code: 'SHUT_DOWN' });
  }
  assert.equal((await h.rejection(m.generate('x').result)).code, 'SHUT_DOWN');
  for (const call of [() => m.warmup(), () => m.trim(), () => m.swapModel(h.stories, '2'), () => m.reloadRegistry(),
    () => m.setFallbackModel(null), () => m.exportSession('x'), () => m.importSession('x', new ArrayBuffer(8)),
    () => m.loadSessionFile('x', '/tmp/x'), () => m.saveSessionFile('x', '/tmp/x')]) {
    assert.equal((await h.rejection(call())).code, 'SHUT_DOWN', call.toString());
  }
  g.cancel();  // no-op
  await m.release();  // twice: resolves
});
