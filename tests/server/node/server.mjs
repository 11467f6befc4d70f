// Starts `edgellm serve` on a free loopback port for one test file and stops it afterwards.
// EDGELLM_BIN: the CLI (default ../../../build/edgellm); EDGELLM_TESTDATA: shared/ (models/).
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
export const bin = process.env.EDGELLM_BIN || path.join(repo, "build/edgellm");
export const model = path.join(process.env.EDGELLM_TESTDATA || path.resolve(repo, "../shared"), "models/stories260K.gguf");

export async function startServer(args = [], env = {}) {
  const proc = spawn(bin, ["serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "--no-warmup", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env },
  });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("edgellm serve did not start in 20 s:\n" + log)), 20000);
    proc.stderr.on("data", (d) => {
      log += d.toString();
      const m = log.match(/on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`edgellm serve exited with ${code}:\n${log}`)); });
  });
  return {
    url,
    log: () => log,
    // GET /metrics (with the API key when the server has one: env.EDGELLM_TEST_KEY).
    async metric(name) {
      const headers = env.EDGELLM_TEST_KEY ? { Authorization: "Bearer " + env.EDGELLM_TEST_KEY } : {};
      const text = await (await fetch(url + "/metrics", { headers })).text();
      const line = text.split("\n").find((l) => l.startsWith(name + " "));
      return line ? Number(line.slice(name.length + 1)) : NaN;
    },
    // SIGSTOP / SIGCONT: freeze the server between two observations of a client (the page test),
    // so what the client sees does not depend on how fast this machine generates.
    signal(name) { proc.kill(name); },
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill("SIGCONT");
      const exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
