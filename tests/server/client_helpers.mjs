// Reading replies from the official openai client: streamed chunks gathered into the shape of a whole reply.
export async function gatherChat(stream) {
  const out = { content: '', toolCalls: [], finish: null, plumb: null, usage: null, role: null, chunks: 0 };
  for await (const chunk of stream) {
    out.chunks += 1;
    if (chunk.usage) out.usage = chunk.usage;
    if (chunk.plumb) out.plumb = chunk.plumb;
    for (const choice of chunk.choices) {
      const delta = choice.delta ?? {};
      if (delta.role) out.role = delta.role;
      if (delta.content) out.content += delta.content;
      for (const call of delta.tool_calls ?? []) {
        const slot = (out.toolCalls[call.index] ??= { id: '', name: '', arguments: '' });
        if (call.id) slot.id = call.id;
        if (call.function?.name) slot.name += call.function.name;
        if (call.function?.arguments) slot.arguments += call.function.arguments;
      }
      if (choice.finish_reason) out.finish = choice.finish_reason;
    }
  }
  return out;
}

export function wholeChat(reply) {
  const choice = reply.choices[0];
  return {
    content: choice.message.content ?? '',
    toolCalls: (choice.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
    finish: choice.finish_reason,
    plumb: reply.plumb,
    usage: reply.usage,
  };
}

export async function gatherCompletion(stream) {
  const out = { text: '', finish: null, plumb: null, usage: null };
  for await (const chunk of stream) {
    if (chunk.usage) out.usage = chunk.usage;
    if (chunk.plumb) out.plumb = chunk.plumb;
    for (const choice of chunk.choices) {
      out.text += choice.text;
      if (choice.finish_reason) out.finish = choice.finish_reason;
    }
  }
  return out;
}

export async function gatherResponseEvents(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

// Two characters (code points) from the middle of `text`: a stop string the reply really contains.
export function middleStop(text) {
  const points = [...text];
  if (points.length < 4) return null;
  const at = Math.floor(points.length / 2);
  return points.slice(at, at + 2).join('');
}
