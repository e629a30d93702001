"""A scripted LLM on loopback, speaking the OpenAI chat-completions wire format over real HTTP.

    python scripted_llm.py SCRIPT.json REQUESTS.jsonl [WHEN.json [SENT.jsonl [stream|json]]]

SCRIPT.json is a list of answers, given in order (the last one repeats); an
answer that is an integer is sent as that HTTP status instead, and one that is
``{"delay": SECONDS, "answer": ANSWER}`` is sent after that long (requests are
served in parallel, so a slow answer does not hold up the next request). Requests for
the anti-stagnation assessment (their system prompt says so) get a fixed
assessment instead and do not consume the script. Every request body is
appended to REQUESTS.jsonl. The port it listens on is printed first.

Both files are read again at every request, so a test can script the agent while the node runs:
answers appended to SCRIPT.json are given next (after the one being repeated), and WHEN.json
(optional) is a list of ``{"when": TEXT, "answer": ANSWER}``: each is given once, instead of the
next scripted answer, to the first request whose messages contain TEXT (how a test answers what a
person typed without knowing which tick will see it).

An entry may read the prompt instead: ``{"match": REGEX, "answer": TEMPLATE}`` is given to a request
whose messages the regular expression (DOTALL) matches, its ``{{1}}`` / ``{{name}}`` filled with the
match's groups (how a scripted agent accepts the offer whose id it is shown). With ``"each": true``
the template is filled once per match and the fills are joined by newlines between ``"before"`` and
``"after"`` (one command per task shown). ``{{words}}`` becomes a dozen words that differ at every
request (so the agent's answers never read as repetitions). ``"times"`` (default 1) is how often the
entry may be given; 0: without end. ``"when"`` and ``"match"`` together: both must hold.

A request with ``"stream": true`` is answered as the OpenAI servers stream (``text/event-stream``:
one ``data:`` chunk of ``choices[0].delta.content`` a word, then ``data: [DONE]``), unless the last
argument is ``json`` (a server that does not stream: one JSON body, always). An answer
``{"chunk_delay": SECONDS, "answer": ...}`` waits that long between its chunks. SENT.jsonl gets a
line per streamed answer: the wall-clock time (ms) each chunk was written (what a test of the
streamed answer on screen measures from).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    script_path, requests_log = sys.argv[1], sys.argv[2]
    when_path = sys.argv[3] if len(sys.argv) > 3 else None
    sent_path = sys.argv[4] if len(sys.argv) > 4 else None
    streams = (sys.argv[5] if len(sys.argv) > 5 else "stream") == "stream"
    served = {"n": 0}
    used: dict[int, int] = {}  # how often each WHEN.json entry was given
    lock = threading.Lock()

    def next_answer(request: dict):
        """Under the lock: the first WHEN entry not used up that the request's text fits, else the
        next scripted answer (the last one repeats until more are appended)."""
        if when_path and os.path.exists(when_path):
            prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages") or [])
            for i, entry in enumerate(_load(when_path)):
                times = entry.get("times", 1)
                if times and used.get(i, 0) >= times or entry.get("when", "") not in prompt:
                    continue
                answer = _filled(entry, prompt, served["n"] + sum(used.values()))
                if answer is not None:
                    used[i] = used.get(i, 0) + 1
                    return answer
        script = _load(script_path)
        index = min(served["n"], len(script) - 1)
        served["n"] = index + 1
        return script[index]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the http.server API)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = json.loads(body or b"{}")
            system = (request.get("messages") or [{}])[0].get("content", "")
            with lock:
                with open(requests_log, "a", encoding="utf-8") as f:
                    f.write(body.decode("utf-8") + "\n")
                if "ANTI-STAGNATION ASSESSMENT" in system:
                    answer = json.dumps({"assessment": "scripted", "novelty_score": 0.5, "new_ideas": ["an idea"],
                                         "refined_ideas": [], "discarded_ideas": [], "tags": ["scripted"],
                                         "emotions": ["curiosity:3", "wonder:2"]})
                else:
                    answer = next_answer(request)
            chunk_delay = 0.0
            if isinstance(answer, dict):  # a slow answer: the client may have given up by then
                time.sleep(float(answer.get("delay", 0)))
                chunk_delay = float(answer.get("chunk_delay", 0))
                answer = answer["answer"]
            if isinstance(answer, int):
                self.send_response(answer)
                self.end_headers()
                return
            if streams and request.get("stream") is True:
                self.stream(answer, chunk_delay)
                return
            data = json.dumps({"id": f"scripted-{served['n']}", "object": "chat.completion",
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": answer}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def stream(self, answer: str, chunk_delay: float) -> None:
            """The answer as server-sent chunks, a word each (its spaces with it)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            times = []
            pieces = re.findall(r"\s*\S+\s*", answer) or [answer]
            for n, piece in enumerate(pieces):
                if n and chunk_delay:
                    time.sleep(chunk_delay)
                chunk = {"id": "scripted", "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                times.append(int(time.time() * 1000))
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
                             b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True
            if sent_path:
                with lock, open(sent_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"chunks_ms": times, "text": answer[:200]}) + "\n")

        def handle_one_request(self):
            try:
                super().handle_one_request()
            except OSError:
                pass  # a client that went away mid-answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


_WORDS = ("quorum lattice beacon ferry orchard lantern cobalt meadow signal harbor thistle vector basalt ember"
          " willow canyon prism tundra falcon glacier mosaic saffron orbit kelp marble tidal").split()


def _filled(entry: dict, prompt: str, n: int):
    """The entry's answer for this prompt: its template filled from the regex's match (None when
    it has a regex that does not match); any other answer as it is."""
    answer = entry["answer"]
    if "match" not in entry:
        return answer
    found = list(re.finditer(entry["match"], prompt, re.S))
    if not found:
        return None
    if not isinstance(answer, str):
        return answer
    import random

    words = " ".join(random.Random(n).sample(_WORDS, 12))

    def fill(m: re.Match) -> str:
        groups = {str(k): v for k, v in enumerate([m.group(0), *m.groups()])} | m.groupdict()
        return re.sub(r"\{\{(\w+)\}\}", lambda g: words if g.group(1) == "words" else groups.get(g.group(1)) or "",
                      answer)

    if entry.get("each"):
        return (re.sub(r"\{\{words\}\}", words, entry.get("before", "")) + "\n".join(fill(m) for m in found)
                + entry.get("after", ""))
    return fill(found[0])


def _load(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


if __name__ == "__main__":
    main()
