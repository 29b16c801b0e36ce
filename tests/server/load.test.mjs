// A bounded load test: rounds of 64 concurrent streaming chat requests through the official client, for a fixed
// time. Every request must complete, every round must give the same replies, and once the warm-up rounds have
// touched every HTTP thread and filled the prompt cache with these prompts, resident memory must not grow: a leak
// of even 1 KiB per request would exceed the bound over the measured rounds.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { gatherChat } from './client_helpers.mjs';
import { eventually, makeTiny, metrics, metricValue, residentBytes, startPlumb } from './harness.mjs';

const CLIENTS = 64;
const LOAD_SECONDS = Number(process.env.PLUMB_LOAD_SECONDS ?? 20);
const WARM_UP_ROUNDS = 8;
const GROWTH_BOUND = 2 * 1024 * 1024;  // bytes of RSS growth allowed after the warm-up rounds

let server;
let client;

before(async () => {
  // A pool a little larger than the clients, so the warm-up rounds touch every thread's stack and arena.
  server = await startPlumb(makeTiny(), ['--parallel', '16', '--http-threads', '72']);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `plumb serve exit status; stderr: ${server.stderr()}`);
});

const requests = Array.from({ length: CLIENTS }, (_, i) => ({
  model: 'tiny',
  messages: [{ role: 'user', content: `Load client ${i}: ${'more words '.repeat(1 + (i % 11))}` }],
  max_tokens: 24 + (i % 9),
  temperature: 0.9,
  seed: i,
  stream: true,
  stream_options: { include_usage: true },
}));

async function round() {
  const settled = await Promise.allSettled(requests.map(async (request) => gatherChat(
    await client.chat.completions.create({ ...request, model: undefined }))));
  const failed = settled.filter((s) => s.status === 'rejected');
  assert.equal(failed.length, 0, `failed requests: ${failed.map((f) => f.reason?.message).join('; ')}`);
  return settled.map((s) => s.value);
}

async function idleResident() {
  await eventually(async () => {
    const text = await metrics(server.baseURL);
    return metricValue(text, 'plumb_live_streams') === 0 && metricValue(text, 'plumb_waiting_requests') === 0 &&
      metricValue(text, 'plumb_http_requests_in_flight') === 0 && metricValue(text, 'plumb_kv_reserved_bytes') === 0;
  }, 'the server to go idle');
  return residentBytes(server.pid);
}

test(`${CLIENTS} concurrent streams for ${LOAD_SECONDS} s: no failure, same replies, no memory growth`, async () => {
  const first = await round();
  first.forEach((reply, i) => {
    assert.match(reply.plumb.token_sha, /^[0-9a-f]{64}$/, `client ${i}`);
    assert.ok(reply.finish === 'length' || reply.finish === 'stop', `client ${i} finish ${reply.finish}`);
    assert.equal(reply.usage.completion_tokens > 0, true);
  });
  for (let i = 1; i < WARM_UP_ROUNDS; ++i) await round();
  const warm = await idleResident();
  const started = Date.now();
  let rounds = 0;
  while (Date.now() - started < LOAD_SECONDS * 1000) {
    const replies = await round();
    replies.forEach((reply, i) => assert.equal(reply.plumb.token_sha, first[i].plumb.token_sha,
      `round ${WARM_UP_ROUNDS + rounds + 1} client ${i}`));
    rounds += 1;
    if (process.env.PLUMB_LOAD_TRACE) {
      const text = await metrics(server.baseURL);
      console.log(`round ${rounds}: rss ${(residentBytes(server.pid) / 2 ** 20).toFixed(2)} MiB cache ` +
        `${metricValue(text, 'plumb_prompt_cache_entries')} entries ${metricValue(text, 'plumb_prompt_cache_bytes')} bytes`);
    }
  }
  const after = await idleResident();
  const growth = after - warm;
  console.log(`load: ${WARM_UP_ROUNDS} warm-up and ${rounds} measured rounds of ${CLIENTS} streams; resident ` +
    `${(warm / 2 ** 20).toFixed(2)} MiB after warm-up, ${(after / 2 ** 20).toFixed(2)} MiB after the load (growth ` +
    `${(growth / 2 ** 20).toFixed(2)} MiB, bound ` +
    `${GROWTH_BOUND / 2 ** 20} MiB)`);
  assert.ok(rounds >= 1, 'at least one round after the warm-up');
  assert.ok(growth <= GROWTH_BOUND, `resident growth ${growth} bytes exceeds the bound ${GROWTH_BOUND}`);
});
