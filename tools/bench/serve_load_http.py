"""The HTTP side of serve_load.py: the endpoint, a started `plumb serve`, streamed and whole chat requests
with their timings, and /metrics."""

import http.client
import json
import re
import signal
import subprocess
import threading
import time
import urllib.parse


class Endpoint:
    def __init__(self, url, api_key):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"serve_load: url '{url}' is not usable; expected http://HOST:PORT")
        self.url, self.host, self.port = url, parts.hostname, parts.port or 80
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def connect(self, timeout):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def get(self, path, timeout=10.0):
        conn = self.connect(timeout)
        try:
            conn.request("GET", path, headers=self.headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode("utf-8", "replace")
        finally:
            conn.close()


class ServerProcess:
    """`plumb serve` started here: its output is drained by threads; the listening line gives the URL."""

    def __init__(self, args, model):
        parallel = args.parallel or args.clients
        self.command = [args.plumb, "serve", model, "--backend", args.backend, "--port", str(args.port),
                        "--parallel", str(parallel)]
        if args.context:
            self.command += ["--context", str(args.context)]
        if args.api_key:
            self.command += ["--api-key", args.api_key]
        self.command += args.serve_arg
        self.stdout, self.stderr = [], []
        self.listening = threading.Event()
        self.url = None
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL)
        threading.Thread(target=self._drain, args=(self.process.stdout, self.stdout, True), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr, self.stderr, False), daemon=True).start()

    def _drain(self, pipe, lines, watch):
        for raw in pipe:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            lines.append(line)
            found = re.search(r"listening on (http://\S+)", line) if watch else None
            if found and not self.listening.is_set():
                self.url = found.group(1)
                self.listening.set()

    def wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.listening.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                return False
        return True

    def resident(self):
        """VmRSS and VmHWM (peak) in bytes from /proc, or {} where it cannot be read."""
        found = {}
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    name, _, value = line.partition(":")
                    if name in ("VmRSS", "VmHWM"):
                        found[name] = int(value.split()[0]) * 1024
        except OSError:
            pass
        return found

    def stop(self, grace=120.0):
        """SIGTERM, then the exit status (SIGKILL and None when it does not exit within `grace`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return None
        return self.process.returncode


def wait_healthy(endpoint, server, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server and server.process.poll() is not None:
            return False
        try:
            if endpoint.get("/health", timeout=5.0)[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def new_record(client, index):
    return {"client": client, "request": index, "status": None, "error": None, "ttft_s": None, "total_s": None,
            "decode_s": None, "completion_tokens": None, "finish": None, "token_sha": None, "content": "",
            "gaps_s": [], "done": False, "server_timings": None}


def handle_event(record, data, now, marks):
    """One SSE data payload of a chat stream; `marks` holds the send, first and last content times."""
    if data == "[DONE]":
        record["done"] = True
        marks["done"] = now
        return
    event = json.loads(data)
    if "error" in event:
        record["error"] = "error event: " + json.dumps(event["error"])[:300]
        return
    for choice in event.get("choices") or []:
        content = (choice.get("delta") or {}).get("content")
        if content:
            if marks.get("last") is not None:
                record["gaps_s"].append(now - marks["last"])
            marks.setdefault("first", now)
            marks["last"] = now
            record["content"] += content
        if choice.get("finish_reason"):
            record["finish"] = choice["finish_reason"]
    if event.get("usage"):
        record["completion_tokens"] = event["usage"].get("completion_tokens")
    if event.get("plumb"):
        record["token_sha"] = event["plumb"].get("token_sha")
        record["server_timings"] = event["plumb"].get("timings")


def read_stream(resp, record, marks, deadline):
    data_lines = []
    while True:
        line = resp.readline()
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError("request took longer than --request-timeout")
        if not line:
            break
        text = line.decode("utf-8").rstrip("\r\n")
        if text == "":
            if data_lines:
                handle_event(record, "\n".join(data_lines), now, marks)
                data_lines = []
        elif text.startswith("data:"):
            data_lines.append(text[6:] if text.startswith("data: ") else text[5:])
    if data_lines:
        handle_event(record, "\n".join(data_lines), time.perf_counter(), marks)


def finish_record(record, marks):
    if marks.get("first") is not None:
        record["ttft_s"] = marks["first"] - marks["sent"]
    end = marks.get("done", marks.get("end"))
    record["total_s"] = end - marks["sent"]
    if marks.get("first") is not None:
        record["decode_s"] = end - marks["first"]
    if record["error"]:
        return
    if record["status"] != 200:
        record["error"] = f"status {record['status']}"
    elif not record["done"]:
        record["error"] = "stream ended without data: [DONE]"
    elif record["completion_tokens"] is None:
        record["error"] = "no usage chunk"
    elif not record["token_sha"]:
        record["error"] = "no plumb.token_sha"


def stream_chat(endpoint, body, record, timeout, conn=None):
    """One streamed request on `conn` (kept open unless it failed) or on a connection of its own."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    marks = {"sent": time.perf_counter()}
    own = conn is None
    conn = conn or endpoint.connect(timeout)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers=endpoint.headers)
        resp = conn.getresponse()
        record["status"] = resp.status
        if resp.status != 200:
            record["error"] = f"status {resp.status}: {resp.read().decode('utf-8', 'replace')[:300]}"
        else:
            read_stream(resp, record, marks, marks["sent"] + timeout)
    except Exception as failure:  # a reply this tool cannot read is a failed request, never a lost thread
        record["error"] = f"{type(failure).__name__}: {failure}"
    finally:
        marks["end"] = time.perf_counter()
        # A closed connection reconnects on its next request.
        if own or record["error"]:
            conn.close()
    finish_record(record, marks)
    return record


def whole_chat(endpoint, body, timeout):
    """The same request, not streamed: (status, reply JSON or None, error text or None)."""
    conn = endpoint.connect(timeout)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers=endpoint.headers)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        if resp.status != 200:
            return resp.status, None, text[:300]
        return resp.status, json.loads(text), None
    except (OSError, http.client.HTTPException, ValueError) as failure:
        return None, None, f"{type(failure).__name__}: {failure}"
    finally:
        conn.close()


def read_metrics(endpoint):
    """Prometheus text as {'name{labels}': value}; {} where /metrics cannot be read."""
    try:
        status, text = endpoint.get("/metrics")
    except OSError:
        return {}
    if status != 200:
        return {}
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
    return values


def wait_idle(endpoint, timeout=30.0):
    """Metrics once no stream runs or waits (the engine has released the load)."""
    deadline = time.monotonic() + timeout
    while True:
        values = read_metrics(endpoint)
        idle = values.get("plumb_live_streams", 0) == 0 and values.get("plumb_waiting_requests", 0) == 0
        if idle or time.monotonic() > deadline:
            return values
        time.sleep(0.05)


