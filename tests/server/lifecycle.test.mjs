// The server's life: the one-line startup report, SIGTERM draining in-flight streams before exiting 0, and a
// drain that runs out of time ending its streams with an error event and a clean end of stream.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import OpenAI from 'openai';

import { eventually, makeTiny, startPlumb } from './harness.mjs';

const model = makeTiny();
// A greedy chat reply that runs to max_tokens on the tiny checkpoint; its first event (the role) comes at once.
const longStream = {
  messages: [{ role: 'user', content: 'Count to one thousand' }], temperature: 0, draft: false, stream: true,
};

// Opens a streamed chat reply and resolves once its first event has arrived, with `rest`, a promise of the whole text.
async function openStream(baseURL, maxTokens) {
  const res = await fetch(`${baseURL}/v1/chat/completions`, {
    method: 'POST', body: JSON.stringify({ ...longStream, max_tokens: maxTokens }),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('data: ')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();  // throws if the connection is cut mid-stream
      if (done) return text;
      text += decoder.decode(value, { stream: true });
    }
  })();
  return { rest };  // wrapped: an async function returning a bare promise would wait for it
}

test('startup report: one line with model, backend, context, memory and address', async () => {
  const server = await startPlumb(model);
  try {
    const lines = server.stdout().trim().split('\n');
    assert.equal(lines.length, 1, server.stdout());
    assert.match(lines[0], /^plumb serve: model \S+ \(gemma4, cpu backend\) context 4096 .*weights [\d.]+ MiB .*resident [\d.]+ MiB listening on http:\/\/127\.0\.0\.1:\d+$/);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('SIGTERM: in-flight streams finish, new requests get 503, then the server exits 0', async () => {
  const server = await startPlumb(model, ['--drain-seconds', '60']);
  const stream = (await openStream(server.baseURL, 2000)).rest;
  process.kill(server.pid, 'SIGTERM');
  await eventually(async () => (await fetch(`${server.baseURL}/health`)).status === 503, 'health to report draining');
  const refused = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'x' }) });
  assert.equal(refused.status, 503);
  assert.equal((await refused.json()).error.code, 'unavailable');
  const text = await stream;
  assert.match(text, /"finish_reason":"length"/);
  assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the stream ends with [DONE]');
  const { code } = await server.exited;
  assert.equal(code, 0, server.stderr());
  assert.match(server.stderr(), /draining in-flight requests/);
});

test('a drain that runs out of time ends open streams with an error event, then exits 0', async () => {
  const server = await startPlumb(model, ['--drain-seconds', '0.3']);
  const client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  const raw = (await openStream(server.baseURL, 3900)).rest;
  const viaClient = await client.chat.completions.create({ ...longStream, max_tokens: 3900 });
  const iterator = viaClient[Symbol.asyncIterator]();
  await iterator.next();
  const started = Date.now();
  process.kill(server.pid, 'SIGTERM');
  const text = await raw;  // a clean end: the read does not throw
  const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
  const last = JSON.parse(events.at(-1).slice('data: '.length));
  assert.equal(last.error.code, 'unavailable', events.at(-1));
  assert.ok(!text.includes('[DONE]'));
  await assert.rejects((async () => { for (;;) { if ((await iterator.next()).done) return; } })(),
    (error) => error.code === 'unavailable');
  const { code } = await server.exited;
  assert.equal(code, 0, server.stderr());
  assert.ok(Date.now() - started < 10000, `stopped after ${Date.now() - started} ms`);
});
