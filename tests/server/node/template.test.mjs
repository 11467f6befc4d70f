// `edgellm template -m MODEL --messages FILE` prints exactly what the server's POST
// /apply-template returns for the same messages (two front ends of one renderer), and refuses a
// bad messages file with a message naming the field.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bin, model, startServer } from "./server.mjs";

let server;
before(async () => { server = await startServer(); });
after(async () => { await server.stop(); });

test("CLI template equals /apply-template", async () => {
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" },
                    { role: "assistant", content: "Hello!" }, { role: "user", content: "Tell me a story" }];
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "edgellm-")), "messages.json");
  fs.writeFileSync(file, JSON.stringify({ messages }));
  const cli = execFileSync(bin, ["template", "-m", model, "--messages", file], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const res = await fetch(server.url + "/apply-template", { method: "POST", body: JSON.stringify({ messages }) });
  assert.equal(res.status, 200);
  const { prompt } = await res.json();
  assert.ok(prompt.includes("Tell me a story"));
  assert.equal(cli, prompt);

  fs.writeFileSync(file, JSON.stringify([{ role: "user", content: 5 }]));
  const bad = spawnSync(bin, ["template", "-m", model, "--messages", file], { encoding: "utf8" });
  assert.equal(bad.status, 2);  // malformed messages: a bad command line (docs/cli.md "Exit status")
  assert.match(bad.stderr, /messages\[0\]\.content/);
});
