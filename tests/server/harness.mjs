// Starts and stops servers for the client tests: a tiny Gemma 4 checkpoint written by `plumb make-tiny`, then
// `plumb serve` (or the scripted test server) on a free port. Every server started is stopped when the test
// process exits, however it exits.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const started = new Set();
process.on('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});

export function plumbBinary() {
  const bin = process.env.PLUMB_BIN;
  if (!bin) throw new Error('PLUMB_BIN must name the plumb executable');
  return bin;
}

// A fresh directory holding the tiny checkpoint; `template` replaces its chat template when given.
export function makeTiny({ template } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plumb-server-test-'));
  const made = spawnSync(plumbBinary(), ['make-tiny', 'gemma4', dir], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`make-tiny failed: ${made.stderr}`);
  if (template) fs.copyFileSync(template, path.join(dir, 'chat_template.jinja'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Spawns `command args` and waits for its "listening on http://HOST:PORT" line.
export async function startServer(command, args, { timeoutMs = 60000, env = {} } = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  started.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (data) => { stderr += data; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => {
    started.delete(child);
    resolve({ code, signal });
  }));
  const baseURL = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.stdout.on('data', (data) => {
      stdout += data;
      const found = stdout.match(/listening on (http:\/\/[^\s]+)/);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    exited.then(({ code }) => reject(new Error(`server exited with ${code} before listening: ${stderr}`)));
  });
  return {
    baseURL,
    pid: child.pid,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    // SIGTERM, then the exit status; SIGKILL if it has not exited in `graceMs`.
    async stop(graceMs = 30000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

export function startPlumb(modelDir, extraArgs = [], options = {}) {
  return startServer(plumbBinary(), ['serve', modelDir, '--port', '0', '--threads', '1', ...extraArgs], options);
}

// The resident set size of a process in bytes, from /proc.
export function residentBytes(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(status.match(/VmRSS:\s+(\d+) kB/)[1]);
  return kib * 1024;
}

// A metric's value from Prometheus text; `labels` is the exact label text, e.g. '{outcome="cancelled"}'.
export function metricValue(text, name, labels = '') {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  if (!line) throw new Error(`metric ${name}${labels} missing`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

export async function metrics(baseURL, key) {
  const res = await fetch(`${baseURL}/metrics`, key ? { headers: { Authorization: `Bearer ${key}` } } : {});
  if (res.status !== 200) throw new Error(`GET /metrics: status ${res.status}`);
  return res.text();
}

// Waits until `check()` is true, polling; throws with `what` after `timeoutMs`.
export async function eventually(check, what, timeoutMs = 10000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
