'use strict';
// Constrained output through the addon (generate's grammar / jsonSchema / jsonObject options):
// sampled at temperature 1 and judged by references outside the grammar engine — V8's JSON.parse
// and the schema's rules checked by hand here, the grammar's finite language listed here — and
// bad constraints rejected with INVALID_ARGUMENT naming the field.
const test = require('node:test');
const assert = require('node:assert/strict');
const edgellm = require('..');
const h = require('./helpers');

const hot = (seed) => ({ temperature: 1, topK: 0, topP: 1, minP: 0, seed });

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    mood: { enum: ['happy', 'sad', 'sleepy'] },
  },
  required: ['name', 'age', 'mood'],
  additionalProperties: false,
};

function checkPerson(text) {
  const v = JSON.parse(text);
  assert.deepEqual(Object.keys(v).sort(), ['age', 'mood', 'name'], text);
  assert.equal(typeof v.name, 'string');
  assert.ok([...v.name].length >= 1 && [...v.name].length <= 12, text);
  assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 120, text);
  assert.ok(['happy', 'sad', 'sleepy'].includes(v.mood), text);
}

test('jsonSchema (an object and its JSON text): every output parses and follows the schema', async () => {
  const m = await edgellm.load(h.stories, { parallel: 4 });
  try {
    const runs = [];
    for (let seed = 1; seed <= 4; ++seed) {
      const jsonSchema = seed % 2 ? person : JSON.stringify(person);
      runs.push(m.generate('Once upon a time', { ...hot(seed), maxTokens: 200, jsonSchema }).result);
    }
    for (const r of await Promise.all(runs)) {
      assert.equal(r.finishReason, 'stop', r.text);
      checkPerson(r.text);
    }
    // Unconstrained, the same prompt is a story, not JSON: the option is what made them valid.
    const free = await m.generate('Once upon a time', { ...hot(1), maxTokens: 40 }).result;
    assert.throws(() => checkPerson(free.text));
  } finally {
    await m.release();
  }
});

test('jsonObject and grammar', async () => {
  const m = await edgellm.load(h.stories, { parallel: 4 });
  try {
    // A story model inside "any JSON object" writes long strings, so most samples reach the
    // budget: each output opens an object, and those that stopped parse as objects.
    const objects = await Promise.all([1, 2, 3].map((seed) =>
      m.generate('Once upon a time', { ...hot(seed), maxTokens: 60, jsonObject: true }).result));
    for (const r of objects) {
      assert.ok(['stop', 'length'].includes(r.finishReason), r.finishReason);
      assert.equal(r.text.trimStart()[0], '{', r.text);
      if (r.finishReason === 'stop') {
        const v = JSON.parse(r.text);
        assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), r.text);
      }
    }
    const language = new Set(['yes.', 'no.', 'maybe later.']);
    const grammar = 'root ::= answer "."\nanswer ::= "yes" | "no" | "maybe later"\n';
    const answers = await Promise.all([1, 2, 3, 4].map((seed) =>
      m.generate('Once upon a time', { ...hot(seed), maxTokens: 20, grammar }).result));
    for (const r of answers) {
      assert.equal(r.finishReason, 'stop');
      assert.ok(language.has(r.text), `'${r.text}' is not a sentence of the grammar`);
    }
  } finally {
    await m.release();
  }
});

test('bad constraints reject with INVALID_ARGUMENT naming the field', async () => {
  const m = await edgellm.load(h.stories);
  try {
    for (const [options, needle] of [
      [{ grammar: 'root ::= ("a"' }, 'grammar:'],
      [{ grammar: '' }, 'grammar is empty'],
      [{ jsonSchema: '{"type": "object"' }, 'json_schema:'],
      [{ jsonSchema: { not: { type: 'string' } } }, 'not'],
      [{ jsonSchema: 5 }, 'jsonSchema'],
      [{ grammar: 'root ::= "a"', jsonObject: true }, 'more than one output constraint'],
      [{ jsonObject: 'yes' }, 'jsonObject'],
    ]) {
      const e = await h.rejection(m.generate('hi', options).result);
      assert.equal(e.code, 'INVALID_ARGUMENT', `${JSON.stringify(options)}: ${e.message}`);
      assert.ok(e.message.includes(needle), `${JSON.stringify(options)}: ${e.message}`);
    }
  } finally {
    await m.release();
  }
});
