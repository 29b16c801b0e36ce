// A bounded load test: rounds of 64 concurrent streaming chat requests through the official client, for a fixed
// time. Every request must complete and every round must give the same replies. Memory: after warm-up rounds that
// touch every HTTP thread and fill the prompt cache with these prompts, the resident size is sampled after each
// round. The allocator settles into a plateau with some noise; a leak climbs steadily. So the highest sample of the
// second half of the rounds may exceed the highest of the first half by at most GROWTH_BOUND (a leak of 2 KiB per
// request exceeds it), and the idle size after the load may exceed the idle size after warm-up by at most
// IDLE_BOUND.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { gatherChat } from './client_helpers.mjs';
import { eventually, makeTiny, metrics, metricValue, residentBytes, startPlumb } from './harness.mjs';

const CLIENTS = 64;
const LOAD_SECONDS = Number(process.env.PLUMB_LOAD_SECONDS ?? 20);
const WARM_UP_ROUNDS = 8;
const MiB = 1024 * 1024;
const GROWTH_BOUND = 1 * MiB;
const IDLE_BOUND = 4 * MiB;

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
  const samples = [];  // [milliseconds since the measured rounds began, resident bytes]
  while (Date.now() - started < LOAD_SECONDS * 1000) {
    const replies = await round();
    replies.forEach((reply, i) => assert.equal(reply.plumb.token_sha, first[i].plumb.token_sha,
      `round ${WARM_UP_ROUNDS + samples.length + 1} client ${i}`));
    samples.push([Date.now() - started, residentBytes(server.pid)]);
  }
  const after = await idleResident();
  const half = (LOAD_SECONDS * 1000) / 2;
  const highest = (list) => Math.max(...list.map(([, bytes]) => bytes));
  const firstHalf = samples.filter(([at]) => at < half);
  const secondHalf = samples.filter(([at]) => at >= half);
  assert.ok(firstHalf.length >= 2 && secondHalf.length >= 2, `measured rounds: ${samples.length}`);
  const climb = highest(secondHalf) - highest(firstHalf);
  const idleGrowth = after - warm;
  const mib = (bytes) => (bytes / MiB).toFixed(2);
  console.log(`load: ${WARM_UP_ROUNDS} warm-up and ${samples.length} measured rounds of ${CLIENTS} streams; highest ` +
    `resident ${mib(highest(firstHalf))} MiB in the first half, ${mib(highest(secondHalf))} MiB in the second ` +
    `(climb ${mib(climb)} MiB, bound ${mib(GROWTH_BOUND)}); idle ${mib(warm)} MiB after warm-up, ${mib(after)} MiB ` +
    `after the load (growth ${mib(idleGrowth)} MiB, bound ${mib(IDLE_BOUND)})`);
  assert.ok(climb <= GROWTH_BOUND, `resident size climbed ${climb} bytes in the second half; bound ${GROWTH_BOUND}`);
  assert.ok(idleGrowth <= IDLE_BOUND, `idle resident growth ${idleGrowth} bytes; bound ${IDLE_BOUND}`);
});
