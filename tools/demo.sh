#!/usr/bin/env bash
# The main job on the embedded default: build Plumb, write a tiny checkpoint, serve it with `plumb serve`, send it a
# real chat request through the official OpenAI client, print the reply, and stop the server with SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
build=${PLUMB_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLUMB_TESTS=OFF ${PLUMB_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" --target plumb
plumb="$build/src/cli/plumb"
model="$build/demo/tiny-gemma4"
"$plumb" make-tiny gemma4 "$model"
"$plumb" info "$model"

log="$build/demo/serve.log"
"$plumb" serve "$model" --port 0 >"$log" 2>&1 &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 600); do
  url=$(grep -o 'listening on http://[^ ]*' "$log" | head -1 | cut -d' ' -f3) || true
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "demo: plumb serve did not start"; cat "$log"; exit 1; }
head -1 "$log"
PLUMB_URL="$url" node --input-type=module -e '
import OpenAI from "openai";
const client = new OpenAI({ baseURL: `${process.env.PLUMB_URL}/v1`, apiKey: "none" });
const model = (await client.models.list()).data[0].id;
const request = { model, messages: [{ role: "user", content: "Say hello to Plumb." }], max_tokens: 24, seed: 1 };
console.log(`request: ${JSON.stringify(request.messages)}`);
const reply = await client.chat.completions.create(request);
console.log(`reply: ${JSON.stringify(reply.choices[0].message.content)} (finish ${reply.choices[0].finish_reason}; ` +
  "the tiny checkpoint has random weights, so its text is noise)");
console.log(`usage: ${JSON.stringify(reply.usage)}`);
console.log(`token_sha: ${reply.plumb.token_sha}`);
'
kill -TERM "$server"
wait "$server"
trap - EXIT
echo "demo: plumb serve stopped cleanly"
