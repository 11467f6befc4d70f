'use strict';
// classify through the addon: the result is the C ABI's (probabilities the softmax of the
// per-label log-probs, summed or per token, the label the argmax, always one of the list; the
// scores themselves are checked against a naive teacher-forced pass in
// tests/runtime/test_runtime_classify.cpp), and bad input rejects with the C ABI's status as
// `code`. The call runs on a libuv worker (run_async).
const test = require('node:test');
const assert = require('node:assert/strict');
const edgellm = require('..');
const h = require('./helpers');

function softmax(z) {
  const max = Math.max(...z);
  const e = z.map((v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

test('classify: the softmax of the labels log-probs, one of the labels; bad input rejects', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 256, parallel: 1 });
  try {
    const labels = [' girl', ' boy', ' dog named Spot', ' big red ball'];
    for (const lengthNormalize of [false, true]) {
      const r = await m.classify('Once upon a time, there was a little', labels, { raw: true, lengthNormalize });
      assert.equal(r.probabilities.length, labels.length);
      const z = r.logprobs.map((lp, i) => (lengthNormalize ? lp / r.labelTokens[i] : lp));
      const want = softmax(z);
      r.probabilities.forEach((p, i) => assert.ok(Math.abs(p - want[i]) < 1e-12, `label ${i}: ${p} vs ${want[i]}`));
      assert.equal(r.index, want.indexOf(Math.max(...want)));
      assert.equal(r.label, labels[r.index]);
      assert.ok(r.labelTokens[2] > r.labelTokens[0]);
      assert.ok(r.promptTokens > 5);
    }
    const chat = await m.classify('The dog ran after the ball.', ['animals', 'food', 'weather'],
      { instruction: 'Pick the topic.' });
    assert.ok(['animals', 'food', 'weather'].includes(chat.label));
    // The same prompt again: its prefix comes from the service's prefix cache, the answer is the same.
    const again = await m.classify('The dog ran after the ball.', ['animals', 'food', 'weather'],
      { instruction: 'Pick the topic.' });
    assert.ok(again.cachedTokens > 0, `cachedTokens ${again.cachedTokens}`);
    assert.ok(again.cachedTokens < again.promptTokens);
    assert.equal(again.label, chat.label);
    again.probabilities.forEach((p, i) => assert.ok(Math.abs(p - chat.probabilities[i]) < 1e-5, `label ${i}`));

    const bad = [
      [[1, ['a']], 'text must be a string'],
      [['t', 'a'], 'labels must be an array of strings'],
      [['t', ['a', 2]], 'labels[1] must be a string'],
      [['t', ['a\0b']], 'labels[0] contains a NUL character'],
      [['t', []], 'labels: give at least one'],
      [['t', [' a', ' a']], 'labels[1] repeats labels[0]'],
      [['', [' a']], 'text is empty'],
      [['t', [' a'], { raw: 'yes' }], 'raw'],
      [['Once upon a time. '.repeat(100), [' a']], 'the context holds 256'],
    ];
    for (const [args, words] of bad) {
      const e = await h.rejection(m.classify(...args));
      assert.equal(e.code, 'INVALID_ARGUMENT', `${words}: ${e.message}`);
      assert.ok(e.message.includes(words), `${words}: ${e.message}`);
    }
  } finally {
    await m.release();
  }
});
