'use strict';
// Hot swap under load through the addon (issue 37): 8 streams running, swapModel in the middle,
// 8 more after it. 0 failed requests; every result names the version that served it, and its text
// is that version's greedy answer (the CLI on that version's file, an independent driver).
const test = require('node:test');
const assert = require('node:assert/strict');
const edgellm = require('..');
const h = require('./helpers');

const PROMPTS = ['Once upon a time', 'The little dog', 'Lily went to the park', 'Tom had a red ball'];
const N = 8;
const MAX_TOKENS = 200;  // long enough to be mid-stream when the swap starts; prompt + 200 fit 256

test('8 concurrent streams, swapModel in the middle: 0 failures, every result names its version', async () => {
  const reference = { 1: {}, v2: {} };
  for (const p of PROMPTS) {
    reference[1][p] = h.cliGreedy(h.stories, p, MAX_TOKENS).toString();
    reference.v2[p] = h.cliGreedy(h.zhPoems, p, MAX_TOKENS).toString();
  }
  const m = await edgellm.load(h.stories, { parallel: N, maxQueued: N, contextSize: 256 });
  try {
    const run = (i) => {
      const prompt = PROMPTS[i % PROMPTS.length];
      const pieces = [];
      let firstPiece;
      const first = new Promise((r) => { firstPiece = r; });
      const g = m.generate(prompt, { temperature: 0, maxTokens: MAX_TOKENS, deadlineMs: 0 }, (p) => {
        pieces.push(p);
        firstPiece();
      });
      g.result.then(firstPiece, firstPiece);
      return { prompt, pieces, first, result: g.result };
    };
    // The first 8 stream; once each has produced a piece they are paused mid-stream, the swap
    // starts, and they resume while the new model loads, then finish on the old one.
    const before = Array.from({ length: N }, (_, i) => run(i));
    await Promise.all(before.map((x) => x.first));
    m.pause();
    const swapped = m.swapModel(h.zhPoems, 'v2');
    m.resume();
    await swapped;
    const after = Array.from({ length: N }, (_, i) => run(i));
    const all = [...before, ...after];
    const results = await Promise.allSettled(all.map((x) => x.result));
    const failed = results.filter((r) => r.status === 'rejected');
    assert.equal(failed.length, 0, `failed: ${failed.map((f) => f.reason && f.reason.message).join('; ')}`);
    results.forEach((r, i) => {
      const { value } = r;
      const { prompt, pieces } = all[i];
      assert.ok(['1', 'v2'].includes(value.modelVersion), value.modelVersion);
      if (i < N) assert.equal(value.modelVersion, '1', 'admitted before the swap: finished on the old model');
      else assert.equal(value.modelVersion, 'v2', 'submitted after the swap: the new model');
      assert.equal(value.text, pieces.join(''));
      assert.equal(value.text, reference[value.modelVersion][prompt], `request ${i} (${value.modelVersion}): ${prompt}`);
    });
    assert.equal(m.metrics().modelSwaps, 1);
    assert.equal(m.metrics().errors, 0);
  } finally {
    await m.release();
  }
});
