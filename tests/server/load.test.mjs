// A bounded load test: rounds of 64 concurrent streaming chat requests through the official client, for a fixed
// time. Every request must complete and every round must give the same replies. Memory is read when the server is
// idle, after warm-up rounds that touch every HTTP thread and fill the prompt cache with these prompts, and again
// after the load. A leak is judged by the heap bytes the server holds (plumb_process_heap_bytes), with glibc's
// per-thread caches off for this server: those caches count as held, and with 72 HTTP threads they fill over
// hundreds of rounds (a few KiB a round), while without them the idle heap comes back to within 2 KiB round after
// round. So idle heap growth beyond HEAP_BOUND over thousands of requests is a leak (a planted leak of 64 bytes per
// request exceeds it). The idle heap does rise once, by up to about 36 KiB, and then stays there for hundreds of
// rounds: the tokenizer's thread-local scratch, which each HTTP thread keeps at the size of the longest prompt it
// has encoded, so it grows until every thread has met the longest prompts. HEAP_BOUND leaves room for that, and
// MIN_ROUNDS makes the requests enough for a 64-byte leak to exceed it on a slow machine.
// The resident size is what users see; it includes allocator caches that settle over tens of rounds, so it gets the
// looser IDLE_BOUND.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { gatherChat } from './client_helpers.mjs';
import { eventually, makeTiny, metrics, metricValue, residentBytes, startPlumb } from './harness.mjs';

const CLIENTS = 64;
const LOAD_SECONDS = Number(process.env.PLUMB_LOAD_SECONDS ?? 20);
const WARM_UP_ROUNDS = 8;
const MiB = 1024 * 1024;
const HEAP_BOUND = 96 * 1024;
const MIN_ROUNDS = 24;
const IDLE_BOUND = 4 * MiB;

let server;
let client;

before(async () => {
  // A pool a little larger than the clients, so the warm-up rounds touch every thread's stack and arena.
  server = await startPlumb(makeTiny(), ['--parallel', '16', '--http-threads', '72'],
    { env: { GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0' } });
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

// The server's memory once it has no stream, request or reservation left.
async function idleMemory() {
  let text;
  await eventually(async () => {
    text = await metrics(server.baseURL);
    return metricValue(text, 'plumb_live_streams') === 0 && metricValue(text, 'plumb_waiting_requests') === 0 &&
      metricValue(text, 'plumb_http_requests_in_flight') === 0 && metricValue(text, 'plumb_kv_reserved_bytes') === 0;
  }, 'the server to go idle');
  return { resident: residentBytes(server.pid), heap: metricValue(text, 'plumb_process_heap_bytes') };
}

test(`${CLIENTS} concurrent streams for ${LOAD_SECONDS} s: no failure, same replies, no memory growth`, async () => {
  const first = await round();
  first.forEach((reply, i) => {
    assert.match(reply.plumb.token_sha, /^[0-9a-f]{64}$/, `client ${i}`);
    assert.ok(reply.finish === 'length' || reply.finish === 'stop', `client ${i} finish ${reply.finish}`);
    assert.equal(reply.usage.completion_tokens > 0, true);
  });
  for (let i = 1; i < WARM_UP_ROUNDS; ++i) await round();
  const warm = await idleMemory();
  assert.ok(warm.heap > 0, `plumb_process_heap_bytes ${warm.heap}; expected the heap in use`);
  const started = Date.now();
  let rounds = 0;
  while (Date.now() - started < LOAD_SECONDS * 1000 || rounds < MIN_ROUNDS) {
    const replies = await round();
    rounds += 1;
    replies.forEach((reply, i) => assert.equal(reply.plumb.token_sha, first[i].plumb.token_sha,
      `round ${WARM_UP_ROUNDS + rounds} client ${i}`));
  }
  const after = await idleMemory();
  const heapGrowth = after.heap - warm.heap;
  const idleGrowth = after.resident - warm.resident;
  const kib = (bytes) => (bytes / 1024).toFixed(1);
  const mib = (bytes) => (bytes / MiB).toFixed(2);
  console.log(`load: ${WARM_UP_ROUNDS} warm-up and ${rounds} measured rounds of ${CLIENTS} streams; idle heap ` +
    `${kib(warm.heap)} KiB after warm-up, ${kib(after.heap)} KiB after the load (growth ${kib(heapGrowth)} KiB, ` +
    `bound ${kib(HEAP_BOUND)}); idle resident ${mib(warm.resident)} MiB after warm-up, ${mib(after.resident)} MiB ` +
    `after the load (growth ${mib(idleGrowth)} MiB, bound ${mib(IDLE_BOUND)})`);
  assert.ok(heapGrowth <= HEAP_BOUND, `idle heap grew ${heapGrowth} bytes over ${rounds * CLIENTS} requests; ` +
    `bound ${HEAP_BOUND}`);
  assert.ok(idleGrowth <= IDLE_BOUND, `idle resident growth ${idleGrowth} bytes; bound ${IDLE_BOUND}`);
});
