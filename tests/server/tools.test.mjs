// Tool calls through the official openai client. A random-weight checkpoint never writes a tool call, so the
// server here runs a scripted lane model (scripted_lane.hpp) behind the real engine, tokenizer, Gemma 4 chat
// template (the fixture revision that renders OpenAI tool messages) and tool-call parser.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Template } from '@huggingface/jinja';
import OpenAI from 'openai';

import { gatherChat, gatherResponseEvents, wholeChat } from './client_helpers.mjs';
import { makeTiny, startServer } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const templatePath = path.join(here, '..', 'fixtures', 'templates', 'gemma4', 'chat_template.jinja');

let server;
let client;

before(async () => {
  const bin = process.env.PLUMB_SCRIPTED_SERVER;
  if (!bin) throw new Error('PLUMB_SCRIPTED_SERVER must name the test_scripted_server executable');
  server = await startServer(bin, [makeTiny({ template: templatePath })]);
  client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `scripted server exit status; stderr: ${server.stderr()}`);
});

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'City name' }, days: { type: 'integer' } },
      required: ['city'],
    },
  },
}];
const question = [{ role: 'user', content: 'What is the weather in Paris?' }];

test('chat: the model\'s tool call comes back as OpenAI tool_calls, streamed and whole alike', async () => {
  const whole = wholeChat(await client.chat.completions.create({ model: 'scripted', messages: question, tools }));
  assert.equal(whole.finish, 'tool_calls');
  assert.equal(whole.content, 'I will check.');
  assert.equal(whole.toolCalls.length, 1);
  assert.equal(whole.toolCalls[0].name, 'get_weather');
  assert.deepEqual(JSON.parse(whole.toolCalls[0].arguments), { city: 'Paris', days: 3 });
  assert.match(whole.toolCalls[0].id, /^call_/);
  const streamed = await gatherChat(await client.chat.completions.create({
    model: 'scripted', messages: question, tools, stream: true,
  }));
  assert.equal(streamed.finish, 'tool_calls');
  assert.equal(streamed.content, whole.content);
  assert.deepEqual(streamed.toolCalls.map((c) => [c.name, c.arguments]), whole.toolCalls.map((c) => [c.name, c.arguments]));
  assert.equal(streamed.plumb.token_sha, whole.plumb.token_sha);
});

test('chat: without tools, or with tool_choice none, the markers are not parsed', async () => {
  const none = wholeChat(await client.chat.completions.create({
    model: 'scripted', messages: question, tools, tool_choice: 'none',
  }));
  assert.equal(none.toolCalls.length, 0);
  assert.equal(none.finish, 'stop');
  assert.match(none.content, /^I will check\.call:get_weather\{city:Paris,days:3\}$/);
});

test('chat: the tool result goes back through the template and the model answers', async () => {
  const first = await client.chat.completions.create({ model: 'scripted', messages: question, tools });
  const call = first.choices[0].message.tool_calls[0];
  const messages = [...question, first.choices[0].message,
    { role: 'tool', tool_call_id: call.id, content: 'sunny, 24 C' }];
  const answer = await client.chat.completions.create({ model: 'scripted', messages, tools });
  assert.equal(answer.choices[0].message.content, 'It is sunny in Paris.');
  assert.equal(answer.choices[0].finish_reason, 'stop');
  assert.ok(answer.usage.prompt_tokens_details.cached_tokens > 0, 'the earlier turn is resumed from the cache');
});

test('tokenize: tools and tool turns render as the reference Jinja renderer renders them', async () => {
  const messages = [...question,
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"days":2,"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' }];
  const post = async (route, body) => (await fetch(`${server.baseURL}${route}`, { method: 'POST', body: JSON.stringify(body) })).json();
  const tokens = await post('/tokenize', { messages, tools });
  const text = (await post('/detokenize', { tokens: tokens.tokens })).prompt;
  const reference = new Template(fs.readFileSync(templatePath, 'utf8')).render({
    messages: messages.map((m) => (m.tool_calls ? { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } })) } : m)),
    tools, add_generation_prompt: true, bos_token: '<bos>', eos_token: '<turn|>',
  });
  assert.equal(text, reference);
  assert.ok(text.includes('<|tool>declaration:get_weather'), 'the tool is declared to the model');
});

test('responses: the tool call is a function_call item, streamed with its argument events', async () => {
  const responseTools = [{ type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: tools[0].function.parameters }];
  const request = { model: 'scripted', input: 'What is the weather in Paris?', tools: responseTools };
  const whole = await client.responses.create(request);
  assert.equal(whole.status, 'completed');
  const call = whole.output.find((item) => item.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris', days: 3 });
  assert.equal(whole.output_text, 'I will check.');
  const events = await gatherResponseEvents(await client.responses.create({ ...request, stream: true }));
  const types = events.map((e) => e.type);
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  const argumentsDone = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.deepEqual(JSON.parse(argumentsDone.arguments), { city: 'Paris', days: 3 });
  const final = events.at(-1).response;
  assert.deepEqual(final.output.map((item) => item.type), whole.output.map((item) => item.type));
  const followUp = await client.responses.create({
    model: 'scripted', tools: responseTools,
    input: [{ role: 'user', content: 'What is the weather in Paris?' },
      { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  });
  assert.equal(followUp.output_text, 'It is sunny in Paris.');
});
