'use strict';
// Tool calling through the addon (generate's tools / toolChoice / parallelToolCalls options, the
// result's toolCalls and content), judged by references outside the tool grammar and parser:
// V8's JSON.parse with the tools' schema rules checked by hand here, `edgellm serve` of the same
// build answering the same chat greedily (its OpenAI tool_calls), and the same chat without
// tools for toolChoice 'none'. Bad tools reject with INVALID_ARGUMENT naming the field.
// Follow-up turns (an assistant Message's toolCalls, a tool Message's toolCallId) render with
// Qwen2.5's template as transformers renders them (tests/chat/testdata/tool-cases.jsonl) and run
// as `edgellm serve` runs the same OpenAI messages (its prompt tokens, its greedy reply). A
// streamed reply's onToken(piece, { content, toolCalls }) pieces rebuild result.toolCalls (ids
// included) and the calls of edgellm serve's streamed delta.tool_calls.
const fs = require('node:fs');
const path = require('node:path');
const test = require('node:test');
const assert = require('node:assert/strict');
const edgellm = require('..');
const h = require('./helpers');

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', minLength: 1, maxLength: 10 },
          days: { type: 'integer', minimum: 1, maximum: 7 },
          unit: { enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city', 'days', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'set_alarm',
      description: 'An alarm',
      parameters: {
        type: 'object',
        properties: { hour: { type: 'integer', minimum: 0, maximum: 23 }, label: { type: 'string', maxLength: 8 } },
        required: ['hour'],
        additionalProperties: false,
      },
    },
  },
];

// The tools' schemas, checked by hand on a parsed call.
function checkCall(call) {
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  const a = JSON.parse(call.arguments);
  if (call.name === 'get_weather') {
    assert.deepEqual(Object.keys(a).sort(), ['city', 'days', 'unit'], call.arguments);
    assert.ok(typeof a.city === 'string' && [...a.city].length >= 1 && [...a.city].length <= 10, call.arguments);
    assert.ok(Number.isInteger(a.days) && a.days >= 1 && a.days <= 7, call.arguments);
    assert.ok(['celsius', 'fahrenheit'].includes(a.unit), call.arguments);
  } else {
    assert.equal(call.name, 'set_alarm');
    assert.ok(Object.keys(a).every((k) => k === 'hour' || k === 'label'), call.arguments);
    assert.ok(Number.isInteger(a.hour) && a.hour >= 0 && a.hour <= 23, call.arguments);
    assert.ok(a.label === undefined || (typeof a.label === 'string' && [...a.label].length <= 8), call.arguments);
  }
}

const greedy = { temperature: 0, maxTokens: 300 };
const ask = (text) => [{ role: 'user', content: text }];

test('toolChoice required / named: calls that follow the schemas, the same as edgellm serve gives', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 2048, parallel: 2 });
  const serve = await h.startServe(h.stories, ['-c', '2048']);
  try {
    const required = { ...greedy, tools, toolChoice: 'required', parallelToolCalls: false };
    const named = { ...greedy, tools: JSON.stringify(tools), toolChoice: { type: 'function', function: { name: 'set_alarm' } } };
    const [a, b] = await Promise.all([
      m.generate(ask('What is the weather in Oslo?'), required).result,
      m.generate(ask('Wake me up.'), named).result,
    ]);
    for (const r of [a, b]) {
      assert.equal(r.finishReason, 'tool_calls', r.text);
      assert.equal(r.toolCalls.length, 1, r.text);
      assert.equal(r.content, '', r.text);
      checkCall(r.toolCalls[0]);
    }
    assert.equal(b.toolCalls[0].name, 'set_alarm');
    // The server's answer to the same chat (OpenAI's body): the same calls, greedy.
    for (const [r, body] of [
      [a, { messages: ask('What is the weather in Oslo?'), tools, tool_choice: 'required', parallel_tool_calls: false }],
      [b, { messages: ask('Wake me up.'), tools, tool_choice: { type: 'function', function: { name: 'set_alarm' } } }],
    ]) {
      const res = await fetch(`${serve.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...body, temperature: 0, max_tokens: 300 }),
      });
      const j = await res.json();
      assert.equal(res.status, 200, JSON.stringify(j));
      assert.equal(j.choices[0].finish_reason, 'tool_calls');
      const calls = j.choices[0].message.tool_calls;
      assert.equal(calls.length, r.toolCalls.length);
      assert.equal(calls[0].function.name, r.toolCalls[0].name);
      assert.deepEqual(JSON.parse(calls[0].function.arguments), JSON.parse(r.toolCalls[0].arguments));
    }
  } finally {
    await serve.stop();
    await m.release();
  }
});

test("toolChoice 'none': the text of the same chat without tools, no calls", async () => {
  const m = await edgellm.load(h.stories, { contextSize: 2048 });
  try {
    const opts = { temperature: 0, maxTokens: 40 };
    const withNone = await m.generate(ask('Tell me a story.'), { ...opts, tools, toolChoice: 'none' }).result;
    const without = await m.generate(ask('Tell me a story.'), opts).result;
    assert.notEqual(withNone.finishReason, 'tool_calls');
    assert.deepEqual(withNone.toolCalls, []);
    assert.ok(withNone.text.length > 0);
    assert.equal(withNone.text, without.text);
    assert.equal(withNone.content, withNone.text);
    assert.deepEqual(without.toolCalls, []);
  } finally {
    await m.release();
  }
});

test('bad tools and choices reject with INVALID_ARGUMENT naming the field', async () => {
  const m = await edgellm.load(h.stories);
  try {
    const one = [{ type: 'function', function: { name: 'f' } }];
    for (const [input, options, needle] of [
      [ask('hi'), { tools: '[{' }, 'tools: not JSON'],
      [ask('hi'), { tools: 5 }, 'options.tools'],
      [ask('hi'), { tools: [{ type: 'function', function: { name: 'a b' } }] }, 'may only hold'],
      [ask('hi'), { tools: one, toolChoice: { type: 'function', function: { name: 'g' } } }, 'not among the tools'],
      [ask('hi'), { tools: one, toolChoice: 'sometimes' }, 'options.toolChoice'],
      [ask('hi'), { toolChoice: 'required' }, 'no tools'],
      ['Once upon a time', { tools: one }, 'chat feature'],
      [ask('hi'), { tools: one, grammar: 'root ::= "x"' }, 'only one output constraint'],
    ]) {
      const e = await h.rejection(m.generate(input, options).result);
      assert.equal(e.code, 'INVALID_ARGUMENT', `${JSON.stringify(options)}: ${e.message}`);
      assert.ok(e.message.includes(needle), `${JSON.stringify(options)}: ${e.message}`);
    }
  } finally {
    await m.release();
  }
});

test('follow-up turns: rendered as transformers renders them, answered as edgellm serve answers', async () => {
  const template = path.join(h.root, 'tests/chat/templates/qwen2.5-instruct.jinja');
  const golden = fs.readFileSync(path.join(h.root, 'tests/chat/testdata/tool-cases.jsonl'), 'utf8').trim().split('\n')
    .map((l) => JSON.parse(l)).filter((c) => c.template === 'qwen2.5' && c.rendered !== undefined);
  const m = await edgellm.load(h.stories, { contextSize: 2048, chatTemplate: template });
  const serve = await h.startServe(h.stories, ['-c', '2048', '--chat-template', template]);
  const post = async (body) => {
    const res = await fetch(`${serve.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, temperature: 0, max_tokens: 12 }),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    for (const name of ['one-call', 'parallel-calls']) {
      const plain = golden.find((c) => c.conversation === name && c.tools === null);
      const withTools = golden.find((c) => c.conversation === name && c.tools !== null);
      // OpenAI's messages (arguments as JSON text) and NAPI's (the result's toolCalls shape).
      const openai = plain.messages.map((msg) => (msg.tool_calls === undefined ? msg : {
        ...msg, tool_calls: msg.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.stringify(c.function.arguments) } })),
      }));
      const napi = openai.map((msg) => {
        const out = { role: msg.role, content: msg.content };
        if (msg.tool_calls) out.toolCalls = msg.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
        if (msg.tool_call_id) out.toolCallId = msg.tool_call_id;
        return out;
      });
      assert.equal(m.applyTemplate(napi), plain.rendered, name);
      const [r, rt] = await Promise.all([
        m.generate(napi, { temperature: 0, maxTokens: 12 }).result,
        m.generate(napi, { temperature: 0, maxTokens: 1, tools: withTools.tools }).result,
      ]);
      assert.equal(r.promptTokens, m.tokenize(plain.rendered, { parseSpecial: true }).length, name);
      assert.equal(rt.promptTokens, m.tokenize(withTools.rendered, { parseSpecial: true }).length, name);
      const s = await post({ messages: openai });
      assert.equal(s.status, 200, JSON.stringify(s.body));
      assert.equal(s.body.usage.prompt_tokens, r.promptTokens, name);
      assert.equal(s.body.choices[0].message.content, r.text, name);
      const st = await post({ messages: openai, tools: withTools.tools, max_tokens: 1 });
      assert.equal(st.status, 200, JSON.stringify(st.body));
      assert.equal(st.body.usage.prompt_tokens, rt.promptTokens, name);
    }
    // A result of no call: refused by both, in the same words.
    const orphan = [{ role: 'user', content: 'Weather?' }, { role: 'tool', toolCallId: 'call_9', content: 'sunny' }];
    const e = await h.rejection(m.generate(orphan, { maxTokens: 4 }).result);
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.equal(e.message, 'messages[1].tool_call_id: "call_9" is the id of no call an earlier assistant turn made');
    const s = await post({ messages: [orphan[0], { role: 'tool', tool_call_id: 'call_9', content: 'sunny' }] });
    assert.equal(s.status, 400);
    assert.equal(s.body.error.message, e.message);
  } finally {
    await serve.stop();
    await m.release();
  }
});

test("streamed calls: onToken's toolCalls pieces are result.toolCalls and edgellm serve's delta.tool_calls", async () => {
  const m = await edgellm.load(h.stories, { contextSize: 2048, parallel: 2 });
  const serve = await h.startServe(h.stories, ['-c', '2048']);
  // Rebuilds calls from OpenAI-shaped pieces: [{ index, id, name, arguments }].
  const rebuild = (calls, pieces) => {
    for (const d of pieces) {
      if (d.index === calls.length) {
        assert.ok(d.id && d.name, `a call's first piece carries its id and name: ${JSON.stringify(d)}`);
        calls.push({ id: d.id, name: d.name, arguments: '' });
      }
      calls[d.index].arguments += d.arguments;
    }
  };
  try {
    for (const [messages, options] of [
      [ask('What is the weather in Oslo?'), { toolChoice: 'required', parallelToolCalls: false }],
      [ask('Wake me up.'), { toolChoice: { type: 'function', function: { name: 'set_alarm' } } }],
    ]) {
      let text = '';
      let content = '';
      const calls = [];
      const r = await m.generate(messages, { ...greedy, tools, ...options }, (piece, ev) => {
        text += piece;
        content += ev.content;
        rebuild(calls, ev.toolCalls);
      }).result;
      assert.equal(r.finishReason, 'tool_calls', r.text);
      assert.equal(text, r.text);
      assert.equal(content, r.content);
      assert.deepEqual(calls, r.toolCalls, 'the streamed calls are the result\'s, ids included');
      // The server's stream of the same chat (greedy): the same calls (its own ids).
      const body = { messages, tools, temperature: 0, max_tokens: 300, stream: true,
        tool_choice: typeof options.toolChoice === 'string' ? options.toolChoice : options.toolChoice };
      if (options.parallelToolCalls === false) body.parallel_tool_calls = false;
      const res = await fetch(`${serve.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      const served = [];
      for (const line of (await res.text()).split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const delta = JSON.parse(line.slice(6)).choices[0]?.delta || {};
        rebuild(served, (delta.tool_calls || []).map((d) => ({ index: d.index, id: d.id || '',
          name: d.function?.name || '', arguments: d.function?.arguments || '' })));
      }
      assert.deepEqual(served.map((c) => [c.name, c.arguments]), calls.map((c) => [c.name, c.arguments]));
    }
    // Without tools the second argument is absent.
    const seen = [];
    await m.generate(ask('Tell me a story.'), { temperature: 0, maxTokens: 8 }, (piece, ev) => seen.push(ev)).result;
    assert.ok(seen.length > 0 && seen.every((ev) => ev === undefined));
  } finally {
    await serve.stop();
    await m.release();
  }
});
