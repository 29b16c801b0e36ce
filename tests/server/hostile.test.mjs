// Malformed and hostile input against `plumb serve`: each gets the right status and an error in OpenAI's shape,
// and the server keeps serving. Also: API keys, slow clients, and clients that vanish mid-stream.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { eventually, makeTiny, metrics, metricValue, startPlumb } from './harness.mjs';

const KEY = 'test-key-1';
let server;

before(async () => {
  server = await startPlumb(makeTiny(), ['--max-body-bytes', '65536', '--read-timeout', '2',
    '--api-key', KEY, '--api-key', 'second key', '--parallel', '4']);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `plumb serve exit status; stderr: ${server.stderr()}`);
});

async function post(path, body, headers = {}) {
  const res = await fetch(`${server.baseURL}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

function expectError(reply, status, code, param) {
  assert.equal(reply.status, status, reply.text);
  assert.ok(reply.json?.error, `an OpenAI error object: ${reply.text}`);
  assert.equal(typeof reply.json.error.message, 'string');
  assert.equal(typeof reply.json.error.type, 'string');
  if (code !== undefined) assert.equal(reply.json.error.code, code, reply.text);
  if (param !== undefined) assert.equal(reply.json.error.param, param, reply.text);
}

const chat = (extra = {}) => ({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ...extra });

async function stillServing() {
  const reply = await post('/v1/chat/completions', chat());
  assert.equal(reply.status, 200, `the server still serves: ${reply.text}`);
}

test('API keys: bearer keys are required except on /health', async () => {
  const missing = await fetch(`${server.baseURL}/v1/models`);
  assert.equal(missing.status, 401);
  assert.equal((await missing.json()).error.code, 'invalid_api_key');
  const wrong = await fetch(`${server.baseURL}/v1/models`, { headers: { Authorization: `Bearer ${KEY}x` } });
  assert.equal(wrong.status, 401);
  const second = await fetch(`${server.baseURL}/v1/models`, { headers: { Authorization: 'Bearer second key' } });
  assert.equal(second.status, 200);
  assert.equal((await fetch(`${server.baseURL}/health`)).status, 200);
  const client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(client.models.list(), (error) => error.status === 401);
});

test('malformed bodies: JSON syntax, invalid UTF-8, deep nesting, not an object, empty', async () => {
  expectError(await post('/v1/chat/completions', '{"messages": ['), 400, 'invalid_json');
  expectError(await post('/v1/chat/completions', Buffer.from('{"messages": "\xff\xfe"}', 'latin1')), 400, 'invalid_utf8');
  expectError(await post('/v1/chat/completions', '['.repeat(50000)), 400, 'invalid_json');
  expectError(await post('/v1/chat/completions', '[1, 2]'), 400, 'invalid_type', 'body');
  expectError(await post('/v1/chat/completions', ''), 400, 'invalid_json');
  expectError(await post('/tokenize', '{"prompt": '), 400, 'invalid_json');
  await stillServing();
});

test('wrong types and values name the field', async () => {
  expectError(await post('/v1/chat/completions', chat({ temperature: 'hot' })), 400, 'invalid_type', 'temperature');
  expectError(await post('/v1/chat/completions', chat({ top_p: 7 })), 400, 'invalid_value', 'top_p');
  expectError(await post('/v1/chat/completions', chat({ max_tokens: 1e300 })), 400, undefined, 'max_tokens');
  expectError(await post('/v1/chat/completions', { messages: 'hi' }), 400, 'invalid_type', 'messages');
  expectError(await post('/v1/chat/completions', { messages: [{ role: 'user', content: { a: 1 } }] }), 400,
    'invalid_type', 'messages[0].content');
  expectError(await post('/v1/chat/completions', chat({ stream: 'yes' })), 400, 'invalid_type', 'stream');
  expectError(await post('/v1/completions', { prompt: [1, -5] }), 400, undefined, 'prompt[1]');
  expectError(await post('/v1/completions', { prompt: [2, 99999999] }), 400, 'invalid_request');
  expectError(await post('/v1/responses', { input: 42 }), 400, 'invalid_type', 'input');
  expectError(await post('/detokenize', { tokens: ['a'] }), 400, 'invalid_type', 'tokens[0]');
  await stillServing();
});

test('unknown model and unknown route', async () => {
  expectError(await post('/v1/chat/completions', chat({ model: 'gpt-9' })), 404, 'model_not_found', 'model');
  const client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: KEY, maxRetries: 0 });
  await assert.rejects(client.chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }),
    (error) => error.status === 404 && error.code === 'model_not_found');
  expectError(await post('/v1/nothing', {}), 404, 'not_found');
});

test('a prompt over the context is context_length_exceeded, with the limit in the message', async () => {
  const long = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'word '.repeat(5000) }] });
  expectError(long, 400, 'context_length_exceeded');
  assert.match(long.json.error.message, /maximum context length is 4096 tokens/);
  const asked = await post('/v1/completions', { prompt: 'hello', max_tokens: 5000 });
  expectError(asked, 400, 'context_length_exceeded');
  assert.match(asked.json.error.message, /4096/);
  await stillServing();
});

test('a body over the size limit is 413', async () => {
  const reply = await post('/v1/chat/completions', JSON.stringify(chat({ pad: 'x'.repeat(100000) })));
  expectError(reply, 413, 'request_too_large');
  assert.match(reply.json.error.message, /65536/);
  await stillServing();
});

// Opens a raw connection, writes `text`, and resolves with what the server sent once it closes the socket.
function rawExchange(text, { waitMs = 8000 } = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(server.baseURL);
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(text));
    let received = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`socket still open after ${waitMs} ms`)); }, waitMs);
    socket.on('data', (data) => { received += data; });
    socket.on('error', () => {});
    socket.on('close', () => { clearTimeout(timer); resolve(received); });
  });
}

test('slow clients: stalled headers and stalled bodies are dropped after the read timeout', async () => {
  const started = Date.now();
  const stalledHeaders = rawExchange('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
  const stalledBody = rawExchange(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n` +
    'Content-Length: 1000\r\n\r\n{"messages": [');
  await stillServing();  // others are served while the slow ones hang
  await stalledHeaders;
  await stalledBody;
  assert.ok(Date.now() - started < 6000, `slow clients dropped after ${Date.now() - started} ms`);
  const garbage = await rawExchange('NOT HTTP AT ALL\r\n\r\n');
  assert.match(garbage, /^HTTP\/1\.1 400/);
  await stillServing();
});

test('clients that vanish mid-stream cancel their streams and free their state', async () => {
  const before = await metrics(server.baseURL, KEY);
  const cancelledBefore = metricValue(before, 'plumb_engine_requests_total', '{outcome="cancelled"}');
  const url = new URL(server.baseURL);
  // A greedy reply that runs to max_tokens; its first event (the role) comes at once.
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'Count to one thousand' }], max_tokens: 3000,
    temperature: 0, draft: false, stream: true });
  const request = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  // Each client reads its first event, then drops the connection.
  await Promise.all(Array.from({ length: 6 }, () => new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
    socket.on('data', (data) => { if (String(data).includes('data: ')) socket.destroy(); });
    socket.on('error', () => {});
    socket.on('close', resolve);
  })));
  await eventually(async () => {
    const text = await metrics(server.baseURL, KEY);
    return metricValue(text, 'plumb_live_streams') === 0 && metricValue(text, 'plumb_kv_reserved_bytes') === 0 &&
      metricValue(text, 'plumb_http_requests_in_flight') === 0;
  }, 'every stream to be freed');
  const after = await metrics(server.baseURL, KEY);
  const cancelled = metricValue(after, 'plumb_engine_requests_total', '{outcome="cancelled"}') - cancelledBefore;
  assert.equal(cancelled, 6, 'streams cancelled by disconnects');
  assert.equal(metricValue(after, 'plumb_http_client_disconnects_total'), 6);
  await stillServing();
});

test('a client that leaves while waiting for a whole reply cancels it too', async () => {
  const before = await metrics(server.baseURL, KEY);
  const cancelledBefore = metricValue(before, 'plumb_engine_requests_total', '{outcome="cancelled"}');
  const controller = new AbortController();
  const pending = fetch(`${server.baseURL}/v1/chat/completions`, {
    method: 'POST', signal: controller.signal, headers: { Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Count to one thousand' }], max_tokens: 3000,
      temperature: 0, draft: false }),
  });
  await eventually(async () => metricValue(await metrics(server.baseURL, KEY), 'plumb_live_streams') === 1,
    'the reply to start');
  controller.abort();
  await assert.rejects(pending);
  await eventually(async () => {
    const text = await metrics(server.baseURL, KEY);
    return metricValue(text, 'plumb_live_streams') === 0 && metricValue(text, 'plumb_kv_reserved_bytes') === 0;
  }, 'the reply to be cancelled and freed', 2000);
  const after = await metrics(server.baseURL, KEY);
  assert.equal(metricValue(after, 'plumb_engine_requests_total', '{outcome="cancelled"}') - cancelledBefore, 1);
  await stillServing();
});
