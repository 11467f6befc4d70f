// `edgellm serve --fallback-model FILE`: the degradation ladder's "smaller model" rung on the
// server, as the C ABI's edgellm_set_fallback_model and NAPI's setFallbackModel give it. Memory
// pressure (POST /admin/pressure, level 2 -> rung 4) moves the server to the fallback file: its
// answers are labelled with the fallback's version and equal what a server of that file answers
// in the configuration the ladder reports (its n_ctx and KV type: rungs 2 and 3 apply too). A
// fallback file that cannot be opened stops the server at start, naming the file.
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { startServer, model } from "./server.mjs";

const KEY = "node-test-key";
const poems = path.join(path.dirname(model), "tiny-zh-poems.gguf");
const headers = { Authorization: "Bearer " + KEY, "Content-Type": "application/json" };

async function post(url, route, body) {
  return fetch(url + route, { method: "POST", headers, body: JSON.stringify(body) });
}

// A greedy completion of 12 tokens (end-of-generation ignored): the serving version and text.
async function complete(url) {
  const r = await post(url, "/v1/completions", { prompt: "春风", max_tokens: 12, temperature: 0, ignore_eos: true });
  assert.equal(r.status, 200, await r.clone().text());
  return { version: r.headers.get("x-edgellm-model-version"), text: (await r.json()).choices[0].text };
}

test("memory pressure moves the server to --fallback-model, labelled with --fallback-version", async () => {
  const server = await startServer(["--api-key-env", "EDGELLM_TEST_KEY", "--no-linux-pressure",
                                    "--fallback-model", poems, "--fallback-version", "poems-1"],
                                   { EDGELLM_TEST_KEY: KEY });
  let reference;
  try {
    assert.equal((await complete(server.url)).version, "1");
    assert.equal((await post(server.url, "/admin/pressure", { memory: 2 })).status, 200);
    let state;
    const deadline = Date.now() + 30000;
    for (;;) {
      state = await (await fetch(server.url + "/admin/degradation", { headers })).json();
      if (state.applied_rung === "smaller_model" && state.model_version === "poems-1") break;
      assert.ok(Date.now() < deadline, "the ladder did not reach the fallback model: " + JSON.stringify(state));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const degraded = await complete(server.url);
    assert.equal(degraded.version, "poems-1");
    // The independent reference: a server of the fallback file alone, in the configuration the
    // ladder reports (threads do not change a greedy answer).
    reference = await startServer(["-m", poems, "-c", String(state.n_ctx), "--kv-type", state.kv_type,
                                   "--api-key-env", "EDGELLM_TEST_KEY", "--no-linux-pressure"],
                                  { EDGELLM_TEST_KEY: KEY });
    const alone = await complete(reference.url);
    assert.equal(degraded.text, alone.text);
    assert.ok(degraded.text.length > 0);
  } finally {
    if (reference) assert.equal(await reference.stop(), 0);
    assert.equal(await server.stop(), 0, "server exits cleanly on SIGTERM");
  }
});

test("a --fallback-model that cannot be opened stops the server at start, naming it", async () => {
  await assert.rejects(startServer(["--no-linux-pressure", "--fallback-model", "/nonexistent/small.gguf"]),
                       /exited with [1-9][\s\S]*\/nonexistent\/small\.gguf/);
});
