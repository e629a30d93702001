"""Scripted LLMs for tests: tests/scripted_llm.py served over real HTTP on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


class ScriptedLLM:
    """``stream``: answer a request that asks for a stream as server-sent chunks (False: one JSON body
    always, as a server that does not stream)."""

    def __init__(self, tmp: Path, name: str, answers: list, stream: bool = True):
        self.script, self.requests = tmp / f"{name}.json", tmp / f"{name}.requests.jsonl"
        self.when, self.sent = tmp / f"{name}.when.json", tmp / f"{name}.sent.jsonl"
        self.answers, self.triggers = list(answers), []
        _write(self.script, self.answers)
        _write(self.when, self.triggers)
        self.proc = subprocess.Popen([sys.executable, str(HERE / "scripted_llm.py"), str(self.script),
                                      str(self.requests), str(self.when), str(self.sent),
                                      "stream" if stream else "json"], stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}/v1"

    def append(self, *answers) -> None:
        """Answers given next, while the LLM runs (after the answer it was repeating)."""
        self.answers += answers
        _write(self.script, self.answers)

    def reply_when(self, text: str, answer) -> None:
        """Give ``answer`` once, to the first request whose messages contain ``text``."""
        self.triggers.append({"when": text, "answer": answer})
        _write(self.when, self.triggers)

    def reply_matching(self, pattern: str, answer, *, times: int = 1, each: bool = False, before: str = "",
                       after: str = "", when: str = "", first: bool = False) -> None:
        """Give ``answer`` to a request whose messages ``pattern`` (a regex, DOTALL) matches, its
        ``{{1}}``/``{{name}}`` filled from the match's groups and ``{{words}}`` with words new at each
        request; ``each``: once per match, joined by newlines between ``before`` and ``after``;
        ``times`` (0: without end); ``when``: a text the messages must also contain; ``first``: before
        the rules already given (they are tried in order)."""
        rule = {"match": pattern, "answer": answer, "times": times, "each": each, "before": before, "after": after,
                "when": when}
        self.triggers.insert(0, rule) if first else self.triggers.append(rule)
        _write(self.when, self.triggers)

    def prompts(self) -> list[str]:
        """The text of each main prompt seen so far (all its messages joined), oldest first."""
        return ["\n".join(str(m.get("content", "")) for m in r["messages"]) for r in self.seen()]

    def seen(self, assessments: bool = False) -> list[dict]:
        """The requests it got: the main prompts (or, with ``assessments``, only the mini-queries)."""
        if not self.requests.exists():
            return []
        requests = [json.loads(line) for line in self.requests.read_text().splitlines() if line]
        return [r for r in requests if ("ANTI-STAGNATION ASSESSMENT" in r["messages"][0]["content"]) == assessments]

    def streamed(self) -> list[dict]:
        """The answers sent as streams so far: {chunks_ms: [wall-clock ms of each chunk], text}."""
        if not self.sent.exists():
            return []
        return [json.loads(line) for line in self.sent.read_text().splitlines() if line]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _write(path: Path, value) -> None:
    """Atomically (the server reads the file at every request)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    tmp.replace(path)


def command_block(*commands: dict) -> str:
    return "# Commands:\n" + "\n".join(json.dumps(c) for c in commands) + "\n# End of commands\n"


_WORDS = ("quorum lattice beacon ferry orchard lantern cobalt meadow signal harbor thistle vector basalt"
          " ember willow canyon prism tundra falcon glacier mosaic saffron orbit kelp marble tidal").split()


def distinct_answers(n: int, commands=lambda i, text: [{"cmd_id": f"m{i}", "type": "llm_memory_add",
                                                         "args": {"text": text}}]) -> list[str]:
    """``n`` answers different enough that none reads as a repetition of another, each with the
    commands ``commands(i, its text)`` returns."""
    import random

    out = []
    for i in range(n):
        text = " ".join(random.Random(i).sample(_WORDS, 12))
        out.append(f"{text}. " + command_block(*commands(i, text)))
    return out


def prompt_section(prompt: str, marker: str, *, required: bool = False) -> str:
    """The text under the first ``## `` heading of a prompt that contains ``marker`` (a whole title, or
    a part such as "(context 3)"); "" when there is none, unless ``required``."""
    for part in ("\n" + prompt).split("\n## ")[1:]:
        head, _, body = part.partition("\n")
        if marker in head:
            return body.rstrip("\n")
    assert not required, f"no heading with {marker!r} in the prompt"
    return ""


def json_lines(section: str) -> list:
    """The objects of a prompt section that holds one JSON object a line (the messages of contexts 6a,
    6b, 6c): every line must parse, so a text that broke out of its JSON string fails here."""
    return [json.loads(line) for line in section.splitlines()]
