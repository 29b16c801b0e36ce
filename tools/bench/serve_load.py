#!/usr/bin/env python3
"""Load on `plumb serve` from C concurrent streaming chat clients, with the Python standard library only.

    serve_load.py --plumb build/src/cli/plumb --model DIR --backend cuda [--cover-vocab --clients 32
                  --requests 2 --max-tokens 128 --warmup 32 --keep-alive --check-solo --json F]
    serve_load.py --url http://127.0.0.1:8000 [...]

With --plumb/--model it starts `plumb serve MODEL --backend B --port P --parallel N ...`, waits for GET /health,
and at the end stops it with SIGTERM and requires exit status 0; with --url it uses a running server. Each client
sends R streaming /v1/chat/completions requests one after another (temperature 0, stream_options.include_usage,
a user message distinct per client and request), each on a new connection or, with --keep-alive, all on one
connection per client opened before the start. Per request: time to first token (request sent to the first
non-empty content delta), total time, completion tokens (from usage), gaps between content deltas. Reported:
median and p90 TTFT, median per-client decode tokens/s (tokens after the first over the time after the first
delta), aggregate tokens/s (all completion tokens over the wall time of the load), failures (non-200, an error
event, no [DONE], no usage or token_sha, a timeout). --check-solo replays each request alone and whole (not
streamed) afterwards and requires the same plumb.token_sha, text and token count. /metrics is read before and
after; the resident size comes from it and, for a server started here, from /proc/PID/status. Exit status: 0
when every request succeeded (and matched), 1 otherwise, 2 when the server could not be started or reached.
"""

import argparse
import json
import os
import shutil
import sys
import threading
import time

from serve_load_http import (Endpoint, ServerProcess, new_record, read_metrics, stream_chat, wait_healthy,
                             wait_idle, whole_chat)
from serve_load_vocab import covering_copy, missing_ids

WORDS = ("river stone lantern orchard copper meadow signal harbor velvet summit thunder willow "
         "garden compass ember glacier").split()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_argument_group("server")
    where.add_argument("--url", help="a running server, e.g. http://127.0.0.1:8000")
    where.add_argument("--plumb", help="the plumb executable, to start `plumb serve` here")
    where.add_argument("--model", help="checkpoint directory (or org/name) for `plumb serve`")
    where.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    where.add_argument("--port", type=int, default=0, help="port for the started server (0: any free port)")
    where.add_argument("--parallel", type=int, help="plumb serve --parallel (default: --clients)")
    where.add_argument("--context", type=int, help="plumb serve --context")
    where.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                       help="one more argument for plumb serve, e.g. --serve-arg=--threads=1 (repeatable)")
    where.add_argument("--cover-vocab", action="store_true",
                       help="serve a linked copy of --model whose tokenizer has a piece for every id (see "
                       "serve_load_vocab.py), so that every generated token streams as text")
    where.add_argument("--start-timeout", type=float, default=600.0, help="seconds to wait for /health")
    where.add_argument("--api-key", help="bearer key (also passed to a started server)")
    load = parser.add_argument_group("load")
    load.add_argument("--clients", type=int, default=32)
    load.add_argument("--requests", type=int, default=2, help="requests per client, one after another")
    load.add_argument("--max-tokens", type=int, default=128)
    load.add_argument("--prompt-words", type=int, default=16, help="filler words in each user message")
    load.add_argument("--warmup", type=int, default=0, metavar="N",
                      help="N streamed requests of up to 16 tokens sent together before the load, not counted")
    load.add_argument("--keep-alive", action="store_true",
                      help="each client connects before the start and sends all its requests on that connection "
                      "(default: a new connection per request, all opened at once)")
    load.add_argument("--no-draft", action="store_true", help='send "draft": false')
    load.add_argument("--request-timeout", type=float, default=600.0, help="seconds one request may take")
    load.add_argument("--check-solo", action="store_true", help="replay each request alone, whole, and compare")
    load.add_argument("--solo-sample", type=int, default=0,
                      help="with --check-solo: replay only this many requests, spread over clients (0: all)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if bool(args.url) == bool(args.plumb):
        parser.error("give either --url or --plumb with --model")
    if args.plumb and not args.model:
        parser.error("--plumb needs --model")
    if args.cover_vocab and not (args.plumb and os.path.isdir(args.model)):
        parser.error("--cover-vocab needs --plumb and --model naming a checkpoint directory")
    if args.clients < 1 or args.requests < 1 or args.max_tokens < 1:
        parser.error("--clients, --requests and --max-tokens must be at least 1")
    return args


def percentile(values, fraction):
    """Linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = fraction * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def chat_body(args, model, client, index, max_tokens=None):
    words = " ".join(WORDS[(client * 7 + index * 3 + i) % len(WORDS)] for i in range(args.prompt_words))
    body = {"model": model, "messages": [{"role": "user", "content": f"Client {client}, request {index}: {words}"}],
            "max_tokens": max_tokens or args.max_tokens, "temperature": 0}
    if args.no_draft:
        body["draft"] = False
    return body


def run_clients(endpoint, args, model, clients, requests, max_tokens=None, first_client=0):
    """`clients` threads released together, each sending `requests` streamed requests in turn: (records, wall s)."""
    records = [[new_record(first_client + c, r) for r in range(requests)] for c in range(clients)]
    start_line = threading.Barrier(clients + 1)

    def client(c):
        conn = None
        if args.keep_alive:
            conn = endpoint.connect(args.request_timeout)
            try:
                conn.connect()
            except OSError:
                conn.close()  # the first request connects again and records what fails
        start_line.wait()
        for r, record in enumerate(records[c]):
            body = chat_body(args, model, record["client"], r, max_tokens)
            stream_chat(endpoint, body, record, args.request_timeout, conn)
        if conn:
            conn.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    start_line.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return [record for row in records for record in row], time.perf_counter() - began


def solo_sample(records, count):
    """All records, or `count` of them taken round-robin over clients (request 0 of each client first)."""
    if count <= 0 or count >= len(records):
        return records
    ordered = sorted(records, key=lambda record: (record["request"], record["client"]))
    return ordered[:count]


def solo_fields(reply):
    """What a whole reply must share with the streamed one; None where the reply lacks a field."""
    try:
        return {"token_sha": reply["plumb"]["token_sha"], "content": reply["choices"][0]["message"]["content"] or "",
                "completion_tokens": reply["usage"]["completion_tokens"]}
    except (KeyError, IndexError, TypeError):
        return None


def solo_problem(endpoint, args, model, record):
    """Replays one streamed request alone and whole; the difference found, or None."""
    where = f"client {record['client']} request {record['request']}"
    status, reply, error = whole_chat(endpoint, chat_body(args, model, record["client"], record["request"]),
                                      args.request_timeout)
    if reply is None:
        return f"{where}: solo request failed: status {status}: {error}"
    solo = solo_fields(reply)
    if solo is None:
        return f"{where}: solo reply lacks plumb.token_sha, choices[0].message.content or usage"
    differing = [key for key in solo if solo[key] != record[key]]
    if not differing:
        return None
    return (f"{where}: streamed reply differs from the solo reply in {', '.join(differing)}; "
            f"expected {json.dumps({k: solo[k] for k in differing})[:300]}, "
            f"got {json.dumps({k: record[k] for k in differing})[:300]}")


def check_solo(endpoint, args, model, records):
    """Replays the successful streamed requests (or a sample) one at a time; returns the differences."""
    problems = []
    for record in solo_sample([r for r in records if not r["error"]], args.solo_sample):
        problem = solo_problem(endpoint, args, model, record)
        record["solo_match"] = problem is None
        if problem:
            problems.append(problem)
    return problems


def metrics_delta(before, after):
    def delta(name):
        if name not in after:
            return None
        return after[name] - before.get(name, 0.0)

    def mean(prefix):
        total, count = delta(prefix + "_sum"), delta(prefix + "_count")
        return total / count if total is not None and count else None

    rounds = delta("plumb_rounds_total")
    rows = delta("plumb_round_rows_total")
    return {"generated_tokens": delta("plumb_generated_tokens_total"),
            "requests_finished": delta('plumb_engine_requests_total{outcome="finished"}'),
            "requests_refused": delta('plumb_engine_requests_total{outcome="refused"}'),
            "requests_failed": delta('plumb_engine_requests_total{outcome="failed"}'),
            "client_disconnects": delta("plumb_http_client_disconnects_total"),
            "server_ttft_mean_s": mean("plumb_time_to_first_token_seconds"),
            "server_inter_token_mean_s": mean("plumb_inter_token_latency_seconds"),
            "rounds": rounds, "rows_per_round": rows / rounds if rows is not None and rounds else None,
            "drafts_proposed": delta("plumb_drafts_proposed_total"),
            "drafts_accepted": delta("plumb_drafts_accepted_total"),
            "resident_bytes_before": before.get("plumb_process_resident_bytes"),
            "resident_bytes_after": after.get("plumb_process_resident_bytes")}


def summarize(records, wall_s):
    done = [r for r in records if not r["error"]]
    tokens = sum(r["completion_tokens"] for r in done)
    ttft = [r["ttft_s"] for r in done if r["ttft_s"] is not None]
    gaps = [gap for r in done for gap in r["gaps_s"]]
    timed = [r for r in done if r["completion_tokens"] > 1 and r["decode_s"]]
    per_request = [(r["completion_tokens"] - 1) / r["decode_s"] for r in timed]
    per_client = []
    for client in sorted({r["client"] for r in timed}):
        mine = [r for r in timed if r["client"] == client]
        per_client.append(sum(r["completion_tokens"] - 1 for r in mine) / sum(r["decode_s"] for r in mine))
    server_first = [r["server_timings"]["first_token_seconds"] for r in done if r["server_timings"]]
    server_queued = [r["server_timings"]["queued_seconds"] for r in done if r["server_timings"]]
    finishes = {}
    for r in done:
        finishes[r["finish"]] = finishes.get(r["finish"], 0) + 1
    return {"requests": len(records), "succeeded": len(done), "failed": len(records) - len(done),
            "wall_s": wall_s, "completion_tokens": tokens,
            "aggregate_tokens_per_s": tokens / wall_s if wall_s > 0 else None,
            "ttft_median_s": percentile(ttft, 0.5), "ttft_p90_s": percentile(ttft, 0.9),
            "ttft_max_s": max(ttft) if ttft else None, "ttft_requests": len(ttft),
            "server_first_token_median_s": percentile(server_first, 0.5),
            "server_first_token_p90_s": percentile(server_first, 0.9),
            "server_queued_max_s": max(server_queued) if server_queued else None,
            "total_median_s": percentile([r["total_s"] for r in done], 0.5),
            "client_tokens_per_s_median": percentile(per_client, 0.5),
            "client_tokens_per_s_min": min(per_client) if per_client else None,
            "request_tokens_per_s_median": percentile(per_request, 0.5),
            "gap_median_s": percentile(gaps, 0.5), "gap_p90_s": percentile(gaps, 0.9),
            "gap_p99_s": percentile(gaps, 0.99), "gap_max_s": max(gaps) if gaps else None,
            "finish_reasons": finishes}


def record_json(record):
    gaps = record["gaps_s"]
    kept = {key: value for key, value in record.items() if key not in ("content", "gaps_s")}
    kept.update(content_chars=len(record["content"]), content_deltas=len(gaps) + (1 if record["ttft_s"] else 0),
                gap_median_s=percentile(gaps, 0.5), gap_max_s=max(gaps) if gaps else None)
    return kept


def fmt(value, unit="", scale=1.0, digits=3):
    return "n/a" if value is None else f"{value * scale:.{digits}f}{unit}"


def mib(value):
    return fmt(value, " MiB", 1.0 / (1 << 20), 1)


def print_summary(args, summary, result):
    s = summary
    print(f"serve_load: {args.clients} clients x {args.requests} requests, max_tokens {args.max_tokens}: "
          f"{s['succeeded']}/{s['requests']} ok, {s['failed']} failed, wall {fmt(s['wall_s'], ' s', digits=2)}")
    print(f"  TTFT median {fmt(s['ttft_median_s'], ' s')}, p90 {fmt(s['ttft_p90_s'], ' s')}, "
          f"max {fmt(s['ttft_max_s'], ' s')} over the {s['ttft_requests']} replies that streamed text; "
          f"server's submit to first token median {fmt(s['server_first_token_median_s'], ' s')}, "
          f"p90 {fmt(s['server_first_token_p90_s'], ' s')}, longest wait for admission "
          f"{fmt(s['server_queued_max_s'], ' s')}")
    print(f"  tokens/s per client median {fmt(s['client_tokens_per_s_median'], digits=2)} "
          f"(slowest client {fmt(s['client_tokens_per_s_min'], digits=2)}), "
          f"aggregate {fmt(s['aggregate_tokens_per_s'], digits=2)} ({s['completion_tokens']} completion tokens)")
    print(f"  gaps between content deltas: median {fmt(s['gap_median_s'], ' ms', 1e3, 1)}, "
          f"p90 {fmt(s['gap_p90_s'], ' ms', 1e3, 1)}, p99 {fmt(s['gap_p99_s'], ' ms', 1e3, 1)}, "
          f"max {fmt(s['gap_max_s'], ' ms', 1e3, 1)}; finish {json.dumps(s['finish_reasons'])}")
    server = result["server_metrics"]
    print(f"  server: TTFT mean {fmt(server.get('server_ttft_mean_s'), ' s')}, inter-token mean "
          f"{fmt(server.get('server_inter_token_mean_s'), ' ms', 1e3, 1)}, rows per round (prompt and decode) "
          f"{fmt(server.get('rows_per_round'), digits=1)}, resident {mib(server.get('resident_bytes_before'))} -> "
          f"{mib(server.get('resident_bytes_after'))}; drafts accepted {fmt(server.get('drafts_accepted'), digits=0)} "
          f"of {fmt(server.get('drafts_proposed'), digits=0)}")
    if "cover_vocab" in result:
        print(f"  --cover-vocab: {result['cover_vocab']['pieces_added']} pieces added to the served tokenizer")
    proc = result.get("process_resident")
    if proc:
        print(f"  /proc VmRSS {mib(proc['before'].get('VmRSS'))} -> {mib(proc['after'].get('VmRSS'))}, "
              f"peak (VmHWM) {mib(proc['after'].get('VmHWM'))}")
    if "solo" in result:
        solo = result["solo"]
        print(f"  solo check: {solo['checked']} replayed alone, {len(solo['mismatches'])} differ")
    for problem in result["problems"][:20]:
        print(f"  FAILED: {problem}")


def served_model(endpoint):
    status, text = endpoint.get("/v1/models")
    if status != 200:
        raise ValueError(f"serve_load: GET /v1/models gave status {status}; expected 200")
    return json.loads(text)["data"][0]["id"]


def measure(args, endpoint, server, result):
    """Warm-up, the load, the solo check; fills `result`, returns the problems found."""
    model = served_model(endpoint)
    result["model"] = model
    problems = []
    if args.warmup > 0:
        # Warm-up clients are numbered after the load's, so their prompts are not the load's.
        warm, _ = run_clients(endpoint, args, model, args.warmup, 1, min(16, args.max_tokens), args.clients)
        problems += [f"warm-up request {r['client']}: {r['error']}" for r in warm if r["error"]]
    before = wait_idle(endpoint)
    proc_before = server.resident() if server else {}
    records, wall = run_clients(endpoint, args, model, args.clients, args.requests)
    after = wait_idle(endpoint)
    if server:
        result["process_resident"] = {"before": proc_before, "after": server.resident()}
    problems += [f"client {r['client']} request {r['request']}: {r['error']}" for r in records if r["error"]]
    result["summary"] = summarize(records, wall)
    result["server_metrics"] = metrics_delta(before, after)
    if args.check_solo:
        mismatches = check_solo(endpoint, args, model, records)
        checked = sum(1 for r in records if "solo_match" in r)
        result["solo"] = {"checked": checked, "mismatches": mismatches}
        problems += mismatches
        if checked == 0:
            problems.append("solo check: no request was replayed")
    result["records"] = [record_json(r) for r in records]
    return problems


def served_checkpoint(args, result):
    """The directory plumb serve loads: --model, or with --cover-vocab a linked copy covering every id."""
    if args.cover_vocab:
        copy, added = covering_copy(args.model)
        result["cover_vocab"] = {"pieces_added": added}
        return copy
    if os.path.isfile(os.path.join(args.model, "config.json")):
        missing, vocab = missing_ids(args.model)
        if missing:
            print(f"serve_load: note: tokenizer.json of '{args.model}' has pieces for {vocab - len(missing)} of "
                  f"the model's {vocab} ids; the others stream no text, so the client-side TTFT and gaps miss "
                  "them (--cover-vocab serves a copy that covers every id)", file=sys.stderr)
    return args.model


def start_server(args, model, result):
    """plumb serve started and listening, or None (the reason printed)."""
    server = ServerProcess(args, model)
    result["server"] = {"command": server.command}
    if not server.wait_listening(args.start_timeout):
        print("serve_load: plumb serve did not start listening; its stderr:\n" + "\n".join(server.stderr[-20:]),
              file=sys.stderr)
        server.stop()
        return None
    result["server"]["start_line"] = next(line for line in server.stdout if "listening on" in line)
    return server


def run(args, result):
    """Starts or reaches the server, measures, stops it; returns the exit status."""
    server, copy = None, None
    try:
        if args.plumb:
            model = served_checkpoint(args, result)
            copy = model if args.cover_vocab else None
            server = start_server(args, model, result)
            if server is None:
                return 2
        endpoint = Endpoint(server.url if server else args.url, args.api_key)
        if not wait_healthy(endpoint, server, args.start_timeout):
            print(f"serve_load: GET {endpoint.url}/health did not answer 200", file=sys.stderr)
            return 2
        result["problems"] = measure(args, endpoint, server, result)
    finally:
        if server:
            exit_status = server.stop()
            result["server"].update(exit_status=exit_status, stderr_tail=server.stderr[-20:])
            if exit_status != 0 and "summary" in result:
                result["problems"].append(f"plumb serve exit status {exit_status}; expected 0 after SIGTERM")
        if copy:
            shutil.rmtree(copy, ignore_errors=True)
    return 1 if result["problems"] else 0


def main(argv):
    args = parse_args(argv)
    result = {"config": {key: value for key, value in vars(args).items() if key != "api_key"}, "problems": []}
    try:
        status = run(args, result)
    except (OSError, ValueError, KeyError) as failure:
        print(f"serve_load: {type(failure).__name__}: {failure}", file=sys.stderr)
        return 2
    if "summary" not in result:
        return status
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    print_summary(args, result["summary"], result)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
