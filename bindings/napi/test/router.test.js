'use strict';
// The router through the addon with JS transports (docs/router.md, issue 37 "Router through NAPI
// and C"):
//   - in-process transports: a low-confidence answer goes to the cloud; a transport that throws,
//     rejects, answers { error } or never settles (cloudTimeoutMs) gives the local answer with the
//     reason; privacy mode never calls it; release() with a call pending neither hangs nor leaks;
//   - over HTTP: a second EdgeLLM (`edgellm serve` of this build) on loopback is the cloud behind a
//     recording proxy, so the test checks on that side what arrived: the system prompt, the last
//     verbatimTurns turns verbatim and a summary of the older ones; the answer is the server's; a
//     local context-full run goes there when allowed; the cloud down -> the local answer with why.
// Thresholds (local, cloud) = (1, 1) send every answer below certainty to the cloud; (0, 0) keep
// every answer local. The reference for local answers is the same request without the router.
const test = require('node:test');
const assert = require('node:assert/strict');
const edgellm = require('..');
const h = require('./helpers');

const ANSWER = JSON.stringify({
  choices: [{ index: 0, message: { role: 'assistant', content: 'The cloud says hello.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 9, completion_tokens: 5 },
});
const CHAT = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const GREEDY = { temperature: 0, maxTokens: 16 };

async function withModel(options, fn) {
  const m = await edgellm.load(h.stories, { contextSize: 256, ...options });
  try {
    return await fn(m);
  } finally {
    await m.release();
  }
}

test('a low-confidence answer goes to the JS transport; a confident one stays local', async () => {
  await withModel({}, async (m) => {
    const reference = (await m.generate(CHAT, GREEDY).result).text;
    const calls = [];
    m.setRouter({ localThreshold: 1, cloudThreshold: 1, cloudModel: 'small-model', transport: async (call) => {
      calls.push(call);
      return { status: 200, body: ANSWER };
    } });
    const pieces = [];
    const r = await m.generate(CHAT, { ...GREEDY, route: 'auto' }, (p) => pieces.push(p)).result;
    assert.equal(calls.length, 1);
    assert.deepEqual([calls[0].tier, calls[0].model], ['small', 'small-model']);
    assert.deepEqual(JSON.parse(calls[0].body).messages, CHAT);
    assert.equal(r.text, 'The cloud says hello.');
    assert.deepEqual(pieces, [r.text], 'the chosen answer arrives as one piece');
    assert.equal(r.modelVersion, 'cloud:small-model');
    assert.equal(r.route.route, 'cloud');
    assert.equal(r.route.tier, 'small');
    assert.ok(r.route.minP <= r.route.score && r.route.score <= r.route.meanP, JSON.stringify(r.route));

    m.setRouter({ localThreshold: 0, cloudThreshold: 0, transport: () => { throw new Error('not called'); } });
    const local = await m.generate(CHAT, { ...GREEDY, route: 'auto' }).result;
    assert.equal(local.route.route, 'local');
    assert.equal(local.text, reference);
    assert.equal(local.modelVersion, '1');
    const metrics = m.metrics();
    assert.equal(metrics.routedCloud, 1);
    assert.equal(metrics.routedLocal, 1);
  });
});

test('transport failures give the local answer with the reason', async () => {
  await withModel({}, async (m) => {
    const reference = (await m.generate(CHAT, GREEDY).result).text;
    const cases = [
      [() => { throw new Error('boom'); }, 'the transport threw: boom'],
      [async () => { throw new Error('nope'); }, 'the transport rejected: nope'],
      [() => Promise.reject('plain string'), 'the transport rejected: plain string'],
      [async () => ({ error: 'offline now' }), 'offline now'],
      [async () => ({ status: 503, body: 'busy' }), 'HTTP 503: busy'],
      [async () => ({ status: 200, body: 'not json' }), 'not JSON'],
      [async () => 42, 'neither {status, body} nor {error}'],
      [async () => ({ status: 'ok' }), 'no HTTP status'],
      [() => ({ status: 200, body: new TextEncoder().encode(ANSWER) }), null],  // not a promise, bytes: fine
    ];
    for (const [transport, why] of cases) {
      m.setRouter({ localThreshold: 1, cloudThreshold: 1, transport });
      const r = await m.generate(CHAT, { ...GREEDY, route: 'auto' }).result;
      if (why === null) {
        assert.equal(r.route.route, 'cloud');
        assert.equal(r.text, 'The cloud says hello.');
        continue;
      }
      assert.equal(r.route.route, 'local', why);
      assert.equal(r.text, reference);
      assert.ok(r.route.reason.includes(`offline: ${why}`) || r.route.reason.includes(why), `${why} in ${r.route.reason}`);
    }
    assert.equal(m.metrics().cloudFailures, cases.length - 1);
  });
});

test('a transport that never answers times out to the local answer', async () => {
  await withModel({}, async (m) => {
    const reference = (await m.generate(CHAT, GREEDY).result).text;
    let settle;
    m.setRouter({ localThreshold: 1, cloudThreshold: 1, cloudTimeoutMs: 300,
      transport: () => new Promise((resolve) => { settle = resolve; }) });
    const r = await m.generate(CHAT, { ...GREEDY, route: 'auto' }).result;
    assert.equal(r.route.route, 'local');
    assert.equal(r.text, reference);
    assert.match(r.route.reason, /no answer within 300 ms/);
    settle({ status: 200, body: ANSWER });  // too late: dropped
    await h.sleep(20);
    const again = await m.generate(CHAT, GREEDY).result;  // the model serves on
    assert.equal(again.text, reference);
  });
});

test('privacy mode never calls the transport', async () => {
  await withModel({}, async (m) => {
    let called = 0;
    m.setRouter({ localThreshold: 1, cloudThreshold: 1, privacy: true, transport: async () => { called++; return {}; } });
    for (const route of ['auto', 'cloud', 'local']) {
      const r = await m.generate(CHAT, { ...GREEDY, route }).result;
      assert.equal(r.route.route, 'local', route);
    }
    const long = [{ role: 'user', content: 'The cat sat on the mat. '.repeat(120) }];
    assert.equal((await h.rejection(m.generate(long, { ...GREEDY, route: 'local' }).result)).code, 'CONTEXT_FULL');
    assert.equal(called, 0);
    assert.equal(m.metrics().privacyBlocks, 3);
  });
});

test('release() with a cloud call pending neither hangs nor leaks; a late answer is harmless', async () => {
  const m = await edgellm.load(h.stories, { contextSize: 256 });
  let settle;
  let called;
  const calledPromise = new Promise((r) => { called = r; });
  m.setRouter({ localThreshold: 1, cloudThreshold: 1, transport: () => {
    called();
    return new Promise((resolve) => { settle = resolve; });
  } });
  const g = m.generate(CHAT, { ...GREEDY, route: 'cloud' });
  await calledPromise;
  await m.release();
  const r = await g.result;
  assert.equal(r.finishReason, 'cancelled');
  settle({ status: 200, body: ANSWER });
  await h.sleep(20);
  // Cancelling a routed request while its call is out.
  await withModel({}, async (m2) => {
    let answer;
    const out = new Promise((r2) => { answer = r2; });
    m2.setRouter({ localThreshold: 1, cloudThreshold: 1, transport: () => new Promise((resolve) => answer(resolve)) });
    const g2 = m2.generate(CHAT, { ...GREEDY, route: 'cloud' });
    const resolveCall = await out;
    g2.cancel();
    assert.equal((await g2.result).finishReason, 'cancelled');
    resolveCall({ status: 200, body: ANSWER });
  });
});

test('a second EdgeLLM on loopback as the cloud: synced context, context-full fallback, cloud down', async () => {
  const cloud = await h.startServe(h.stories);
  const proxy = await h.startRecordingProxy(cloud.url);
  try {
    // Context sync, checked on the cloud's side (a context that holds the conversation, so the
    // local answer's confidence is what sends it).
    await withModel({ contextSize: 1024 }, async (m) => {
      m.setRouter({ localThreshold: 1, cloudThreshold: 1, verbatimTurns: 2, summaryMaxTokens: 8, cloudModel: 'cloud-model',
        transport: h.fetchTransport({ small: proxy.url }) });
      const chat = [
        { role: 'system', content: 'You are a storyteller.' },
        { role: 'user', content: 'turn-one-zebra' }, { role: 'assistant', content: 'answer-one' },
        { role: 'user', content: 'turn-two-yak' }, { role: 'assistant', content: 'answer-two' },
        { role: 'user', content: 'turn-three-xerus' }, { role: 'assistant', content: 'answer-three' },
        { role: 'user', content: 'turn-four-wombat' },
      ];
      const r = await m.generate(chat, { ...GREEDY, route: 'auto' }).result;
      assert.equal(r.route.route, 'cloud', r.route.reason);
      assert.match(r.route.reason, /^low confidence/);
      assert.equal(proxy.exchanges.length, 1);
      const sent = JSON.parse(proxy.exchanges[0].request);
      assert.equal(sent.model, 'cloud-model');
      const roles = sent.messages.map((x) => x.role);
      assert.deepEqual(roles, ['system', 'system', 'user', 'assistant', 'user']);
      assert.equal(sent.messages[0].content, 'You are a storyteller.');
      assert.match(sent.messages[1].content, /^Summary of the earlier conversation: /);
      assert.deepEqual(sent.messages.slice(2).map((x) => x.content), ['turn-three-xerus', 'answer-three', 'turn-four-wombat']);
      // The answer is the cloud's (what the proxy saw come back).
      assert.equal(proxy.exchanges[0].status, 200);
      assert.equal(r.text, JSON.parse(proxy.exchanges[0].response).choices[0].message.content);
      assert.equal(r.modelVersion, 'cloud:cloud-model');
    });

    // A local run that fails for its context goes to the cloud (which has a larger one).
    await withModel({ contextSize: 64 }, async (m) => {
      m.setRouter({ localThreshold: 0, cloudThreshold: 0, transport: h.fetchTransport({ small: proxy.url }) });
      const long = [{ role: 'user', content: 'The cat sat on the mat. '.repeat(12) }];
      const r = await m.generate(long, { ...GREEDY, route: 'local' }).result;
      assert.equal(r.route.route, 'cloud', r.route.reason);
      assert.match(r.route.reason, /the local run failed/);
      assert.equal(r.text, JSON.parse(proxy.exchanges.at(-1).response).choices[0].message.content);
      assert.equal(m.metrics().failureFallbacks, 1);
      m.setRouter({ cloudOnFailure: false, localThreshold: 0, cloudThreshold: 0,
        transport: h.fetchTransport({ small: proxy.url }) });
      assert.equal((await h.rejection(m.generate(long, { ...GREEDY, route: 'local' }).result)).code, 'CONTEXT_FULL');
    });

    // The cloud goes down: the local answer, with the reason.
    await cloud.stop();
    await withModel({}, async (m) => {
      const reference = (await m.generate(CHAT, GREEDY).result).text;
      m.setRouter({ localThreshold: 1, cloudThreshold: 1, transport: h.fetchTransport({ small: cloud.url }) });
      const r = await m.generate(CHAT, { ...GREEDY, route: 'auto' }).result;
      assert.equal(r.route.route, 'local');
      assert.equal(r.text, reference);
      assert.match(r.route.reason, /offline: fetch failed/);
      assert.equal(m.metrics().cloudFailures, 1);
    });
  } finally {
    await proxy.close();
    await cloud.stop();
  }
});
