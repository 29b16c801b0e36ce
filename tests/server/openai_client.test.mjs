// The official openai client drives `plumb serve` on the tiny checkpoint: models, chat (streamed and whole),
// completions (text and token ids), responses (typed events), stop strings, the serial reference, and 32
// concurrent clients whose replies equal their solo runs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { gatherChat, gatherCompletion, gatherResponseEvents, middleStop, wholeChat } from './client_helpers.mjs';
import { makeTiny, metrics, metricValue, startPlumb } from './harness.mjs';

let server;
let client;
let model;

before(async () => {
  server = await startPlumb(makeTiny(), ['--parallel', '8']);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `plumb serve exit status; stderr: ${server.stderr()}`);
});

const hex64 = /^[0-9a-f]{64}$/;

test('models lists the served model', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  model = list.data[0].id;
  assert.equal(list.data[0].object, 'model');
  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);
});

function chatRequest(i, extra = {}) {
  return {
    model,
    messages: [
      { role: 'system', content: 'You answer briefly.' },
      { role: 'user', content: `Question ${i}: ${'tell me more '.repeat(1 + (i % 5))}` },
    ],
    max_tokens: 6 + (i % 7),
    ...(i % 2 ? { temperature: 0.8, top_p: 0.9, top_k: 40, min_p: 0.02, seed: 1000 + i } : { temperature: 0 }),
    ...extra,
  };
}

test('chat: streamed replies equal whole replies, with usage and token_sha', async () => {
  for (const i of [0, 1, 2, 3]) {
    const whole = wholeChat(await client.chat.completions.create(chatRequest(i)));
    const streamed = await gatherChat(await client.chat.completions.create({
      ...chatRequest(i), stream: true, stream_options: { include_usage: true },
    }));
    assert.match(whole.plumb.token_sha, hex64);
    assert.equal(streamed.role, 'assistant');
    assert.equal(streamed.content, whole.content, `request ${i} content`);
    assert.equal(streamed.finish, whole.finish, `request ${i} finish_reason`);
    assert.equal(streamed.plumb.token_sha, whole.plumb.token_sha, `request ${i} token_sha`);
    assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
    assert.equal(streamed.usage.prompt_tokens, whole.usage.prompt_tokens);
    assert.equal(typeof whole.usage.prompt_tokens_details.cached_tokens, 'number');
    assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
  }
});

test('chat: a repeated prompt is served from the prompt cache and says so', async () => {
  const first = await client.chat.completions.create(chatRequest(10));
  const again = await client.chat.completions.create(chatRequest(10));
  assert.equal(again.plumb.token_sha, first.plumb.token_sha);
  assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0,
    `cached_tokens ${again.usage.prompt_tokens_details.cached_tokens}`);
});

test('chat: "draft": false (the serial reference) gives the same tokens as drafting', async () => {
  for (const i of [4, 5]) {
    const drafted = await client.chat.completions.create({ ...chatRequest(i), max_tokens: 24 });
    const serial = await client.chat.completions.create({ ...chatRequest(i), max_tokens: 24, draft: false });
    assert.equal(serial.plumb.drafted_tokens, 0);
    assert.equal(serial.plumb.token_sha, drafted.plumb.token_sha, `request ${i}`);
    assert.equal(serial.choices[0].message.content, drafted.choices[0].message.content);
  }
});

test('chat: a stop string ends the reply before it, streamed and whole alike', async () => {
  const request = { ...chatRequest(6), max_tokens: 24 };
  const free = await client.chat.completions.create(request);
  const stop = middleStop(free.choices[0].message.content);
  assert.ok(stop, `reply long enough for a stop string: ${JSON.stringify(free.choices[0].message.content)}`);
  const whole = wholeChat(await client.chat.completions.create({ ...request, stop: [stop] }));
  const streamed = await gatherChat(await client.chat.completions.create({ ...request, stop: [stop], stream: true }));
  const full = free.choices[0].message.content;
  assert.equal(whole.content, full.slice(0, full.indexOf(stop)));
  assert.equal(whole.finish, 'stop');
  assert.equal(streamed.content, whole.content);
  assert.equal(streamed.plumb.token_sha, whole.plumb.token_sha);
});

test('completions: text and token-id prompts, streamed equal to whole', async () => {
  const prompts = ['Once upon a time', [2, 400, 401, 402, 403]];
  for (const prompt of prompts) {
    const request = { model, prompt, max_tokens: 10, temperature: 0.7, seed: 7 };
    const whole = await client.completions.create(request);
    const streamed = await gatherCompletion(await client.completions.create({
      ...request, stream: true, stream_options: { include_usage: true },
    }));
    assert.equal(whole.object, 'text_completion');
    assert.equal(streamed.text, whole.choices[0].text);
    assert.equal(streamed.finish, whole.choices[0].finish_reason);
    assert.equal(streamed.plumb.token_sha, whole.plumb.token_sha);
    assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
  }
  const ids = await client.completions.create({ model, prompt: [2, 400, 401, 402, 403], max_tokens: 3 });
  assert.equal(ids.usage.prompt_tokens, 5);
});

test('responses: whole, and streamed from response.created to response.completed', async () => {
  const request = { model, input: 'Write a line about rivers.', instructions: 'Be brief.', max_output_tokens: 16, temperature: 0 };
  const whole = await client.responses.create(request);
  assert.equal(whole.object, 'response');
  assert.equal(whole.status, 'incomplete');
  assert.equal(whole.incomplete_details.reason, 'max_output_tokens');
  assert.equal(typeof whole.usage.input_tokens_details.cached_tokens, 'number');
  const stop = middleStop(whole.output_text);
  assert.ok(stop, `reply long enough for a stop string: ${JSON.stringify(whole.output_text)}`);
  const stopped = { ...request, stop: [stop] };
  const wholeStopped = await client.responses.create(stopped);
  assert.equal(wholeStopped.status, 'completed');
  assert.equal(wholeStopped.output_text, whole.output_text.slice(0, whole.output_text.indexOf(stop)));
  const events = await gatherResponseEvents(await client.responses.create({ ...stopped, stream: true }));
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
  assert.equal(types.at(-1), 'response.completed');
  events.forEach((e, i) => assert.equal(e.sequence_number, i, `event ${i} (${e.type}) sequence_number`));
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  const done = events.at(-1).response;
  assert.equal(deltas, wholeStopped.output_text);
  assert.equal(done.output[0].content[0].text, wholeStopped.output_text);
  assert.equal(done.plumb.token_sha, wholeStopped.plumb.token_sha);
  for (const type of ['response.output_item.added', 'response.content_part.added', 'response.output_text.done',
    'response.content_part.done', 'response.output_item.done'])
    assert.ok(types.includes(type), `stream has ${type}`);
});

test('32 concurrent clients get exactly their solo replies', async () => {
  const requests = Array.from({ length: 32 }, (_, i) => chatRequest(100 + i, { max_tokens: 16 + (i % 17) }));
  const solo = [];
  for (const request of requests) solo.push(wholeChat(await client.chat.completions.create(request)));
  const together = await Promise.all(requests.map(async (request, i) => (i % 2
    ? gatherChat(await client.chat.completions.create({ ...request, stream: true }))
    : wholeChat(await client.chat.completions.create(request)))));
  together.forEach((reply, i) => {
    assert.equal(reply.plumb.token_sha, solo[i].plumb.token_sha, `client ${i} token_sha`);
    assert.equal(reply.content, solo[i].content, `client ${i} content`);
  });
});

test('tokenize and detokenize round-trip; chat_template_kwargs reach the template', async () => {
  const post = async (route, body) => (await fetch(`${server.baseURL}${route}`, { method: 'POST', body: JSON.stringify(body) })).json();
  const tokens = await post('/tokenize', { prompt: 'Hello world, again.', add_special_tokens: false });
  assert.equal(tokens.count, tokens.tokens.length);
  assert.equal(tokens.max_model_len, 4096);
  assert.equal((await post('/detokenize', { tokens: tokens.tokens })).prompt, 'Hello world, again.');
  const request = { model, messages: [{ role: 'user', content: 'Think first.' }], max_tokens: 2 };
  const plain = await client.chat.completions.create(request);
  const thinking = await client.chat.completions.create({ ...request, chat_template_kwargs: { enable_thinking: true } });
  assert.notEqual(thinking.usage.prompt_tokens, plain.usage.prompt_tokens);
});

test('metrics: Prometheus text with requests, tokens, latency histograms, drafts and cache hits', async () => {
  const text = await metrics(server.baseURL);
  assert.ok(metricValue(text, 'plumb_http_requests_total', '{route="/v1/chat/completions",status="200"}') > 0);
  assert.ok(metricValue(text, 'plumb_generated_tokens_total') > 0);
  assert.ok(metricValue(text, 'plumb_time_to_first_token_seconds_count') > 0);
  assert.ok(metricValue(text, 'plumb_inter_token_latency_seconds_count') > 0);
  assert.ok(metricValue(text, 'plumb_drafts_proposed_total') >= metricValue(text, 'plumb_drafts_accepted_total'));
  assert.ok(metricValue(text, 'plumb_prompt_cache_hits_total') > 0);
  assert.ok(metricValue(text, 'plumb_process_resident_bytes') > 0);
  assert.ok(metricValue(text, 'plumb_process_heap_bytes') > 0);
  assert.match(text, /# TYPE plumb_time_to_first_token_seconds histogram/);
  assert.match(text, /plumb_time_to_first_token_seconds_bucket\{le="\+Inf"\} \d+/);
});
