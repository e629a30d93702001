"""Commands and self-assessments out of an LLM's answer (seed 000, step 4). Pure.

An answer may carry commands in two places:

* a section that starts with a ``# Commands:`` line (or ``# Команды:``) and
  runs to a ``# End of commands`` line (``# Конец команд``) or to the end of
  the text; inside it, JSON objects or arrays of objects, fenced or not;
* a fenced ```` ```json ```` block anywhere whose object (or array of
  objects) has ``cmd_id`` and ``type``.

Tolerant of the usual formatting noise (fences, bullets, prose between
objects, the section header in either language); strict about what is
accepted: every command must be a map with a unique ``cmd_id`` (1 to 64 of
``[A-Za-z0-9._:-]``), a known ``type`` and ``args`` that satisfy that type's
schema (``command_types``), within that type's size (its schema's limits, so
what a schema admits is never refused for size). A command that fails is not
run: it becomes a ``CommandError`` with a readable reason, which the next tick
shows the LLM. The first ``MAX_COMMANDS`` of an answer are read; the ones after
them are named in one ``too_many_commands`` error. Nothing in the answer can
make extraction raise.

Also read: ``[confidence=x]...[/confidence]`` spans, the ``UnverifiedFacts:``
JSON array, and the ``Confidence: x`` line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from meshnode.engines.cognition import mcp_commands
from meshnode.engines.cognition.command_types import answer_limit, command_type
from meshnode.base.errors import MeshnodeError

MAX_COMMANDS = 64
MAX_DROPPED = 256  # commands past MAX_COMMANDS that are still read far enough to be named
MAX_DEPTH = 16
MAX_FACTS = 64
FACTS_WINDOW = 256 * 1024
_CMD_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# the header ends its line; LLMs sometimes put it after a sentence on the same line
_SECTION = re.compile(r"(?:^|(?<=[\s.!?:]))#+[ \t]*(?:commands|команды)[ \t]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE)
_SECTION_END = re.compile(r"^[ \t>*-]*#+[ \t]*(?:end of commands|конец команд)[ \t.:]*$", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_CONFIDENCE_SPAN = re.compile(r"\[confidence\s*=\s*([0-9]*\.?[0-9]+)\s*\](.*?)\[/confidence\]", re.DOTALL | re.IGNORECASE)
_CONFIDENCE_LINE = re.compile(r"^[ \t]*(?:confidence|сonfidence|уверенность)[ \t]*:[ \t]*([0-9]*\.?[0-9]+)[ \t]*$",
                              re.IGNORECASE | re.MULTILINE)
_FACTS = re.compile(r"UnverifiedFacts[ \t]*:[ \t]*", re.IGNORECASE)


@dataclass(frozen=True)
class Command:
    cmd_id: str
    type: str
    args: dict
    description: str = ""
    target_llm: str | None = None
    mutating: bool = True
    task_id: int | None = None  # the task it works for: an executor error freezes that task (error_levels)


@dataclass(frozen=True)
class CommandError:
    cmd_id: str | None
    code: str
    reason: str


@dataclass(frozen=True)
class Fact:
    id: str
    claim: str
    confidence: float
    context: str = ""
    sources: tuple[str, ...] = ()
    why_unverified: str = ""
    priority: int = 0


@dataclass
class Extraction:
    commands: list[Command] = field(default_factory=list)
    errors: list[CommandError] = field(default_factory=list)
    confidence_spans: list[tuple[float, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    confidence: float | None = None


def extract(answer: str) -> Extraction:
    """Everything an answer asks for and says about itself; see the module doc."""
    out = Extraction()
    if not isinstance(answer, str):
        out.errors.append(CommandError(None, "bad_answer", "the answer is not text"))
        return out
    limit = answer_limit()
    if len(answer) > limit:
        out.errors.append(CommandError(None, "answer_too_long", f"answers are read up to {limit} characters"))
        answer = answer[:limit]
    wanted = MAX_COMMANDS + MAX_DROPPED
    candidates = _in_section(answer, wanted)
    candidates += _in_fences_outside_section(answer, wanted - len(candidates))
    seen: set[str] = set()
    for raw in candidates[:MAX_COMMANDS]:
        result = _command(raw, seen)
        (out.commands if isinstance(result, Command) else out.errors).append(result)
    if len(candidates) > MAX_COMMANDS:
        out.errors.append(_dropped(candidates[MAX_COMMANDS:], more=len(candidates) >= wanted))
    out.confidence_spans = [(float(c), t.strip()) for c, t in _CONFIDENCE_SPAN.findall(answer)
                            if 0 <= float(c) <= 1][:MAX_FACTS]
    lines = _CONFIDENCE_LINE.findall(answer)
    if lines and 0 <= float(lines[-1]) <= 1:
        out.confidence = float(lines[-1])
    out.facts, fact_errors = _facts(answer)
    out.errors.extend(fact_errors)
    return out


# --- where commands are ---------------------------------------------------------------


def _in_section(answer: str, wanted: int) -> list[Any]:
    found: list[Any] = []
    for start in _SECTION.finditer(answer):
        end = _SECTION_END.search(answer, start.end())
        body = answer[start.end(): end.start() if end else len(answer)]
        for value in _json_values(body, wanted - len(found)):
            found.extend(value if isinstance(value, list) else [value])
        if len(found) >= wanted:
            break
    return found[:wanted]


def _in_fences_outside_section(answer: str, wanted: int) -> list[Any]:
    """Fenced JSON with cmd_id and type, outside any commands section (those were read already)."""
    spans = []
    for start in _SECTION.finditer(answer):
        end = _SECTION_END.search(answer, start.end())
        spans.append((start.start(), end.end() if end else len(answer)))
    found: list[Any] = []
    for fence in _FENCE.finditer(answer):
        if len(found) >= wanted:
            break
        if any(a <= fence.start() < b for a, b in spans):
            continue
        for value in _json_values(fence.group(1), wanted - len(found)):
            items = value if isinstance(value, list) else [value]
            if any(isinstance(x, dict) and "cmd_id" in x and "type" in x for x in items):
                found.extend(items)
    return found[:max(0, wanted)]


_OPENERS = frozenset("[{ \t\r\n")


def _json_values(text: str, wanted: int = MAX_COMMANDS) -> list[Any]:
    """The top-level JSON objects and arrays in ``text`` (up to ``wanted``), skipping what is not JSON."""
    decoder = json.JSONDecoder()
    values, i = [], 0
    while len(values) < wanted:
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            break
        i = min(starts)
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        except RecursionError:  # a run of brackets too deep to parse: only its last MAX_DEPTH can start a
            j = i              # command, so skip the rest of the run (one by one it took 19 s for 100k)
            while j < len(text) and text[j] in _OPENERS:
                j += 1
            i = max(i + 1, j - MAX_DEPTH)
            continue
        if isinstance(value, (dict, list)):
            values.append(value)
        i = end
    return values


def _dropped(rest: list[Any], more: bool) -> CommandError:
    """One error naming the commands past MAX_COMMANDS, which were not run."""
    names = []
    for raw in rest[:MAX_COMMANDS]:
        raw = raw if isinstance(raw, dict) else {}
        cmd_id, kind = raw.get("cmd_id"), raw.get("type")
        ident = cmd_id if isinstance(cmd_id, str) and _CMD_ID.fullmatch(cmd_id) else "?"
        names.append(f"{ident} ({kind[:40]})" if isinstance(kind, str) else ident)
    count = f"{len(rest)} or more" if more else str(len(rest))
    shown = ", ".join(names) + (", ..." if len(rest) > len(names) or more else "")
    return CommandError(None, "too_many_commands", f"an answer runs at most {MAX_COMMANDS} commands; these {count}"
                        f" were not run: {shown}. Send them again in a later answer")


# --- what a command must be -----------------------------------------------------------


def _command(raw: Any, seen: set[str]) -> Command | CommandError:
    if not isinstance(raw, dict):
        return CommandError(None, "bad_command", "a command is a JSON object")
    cmd_id = raw.get("cmd_id")
    ident = cmd_id if isinstance(cmd_id, str) and _CMD_ID.fullmatch(cmd_id) else None
    try:
        if ident is None:
            raise _Refused("bad_cmd_id", "cmd_id must be 1 to 64 letters, digits or ._:-")
        if ident in seen:
            raise _Refused("duplicate_cmd_id", f"cmd_id {ident} appears twice")
        if _depth(raw) > MAX_DEPTH:
            raise _Refused("command_too_large", f"a command is at most {MAX_DEPTH} levels deep")
        extra = set(raw) - {"cmd_id", "type", "args", "description", "target_llm", "task_id"}
        if extra:
            raise _Refused("bad_command", f"unknown fields {sorted(extra)[:3]}")
        raw = mcp_commands.alias(raw)  # an outside tool's name as the type: mcp_call
        kind = command_type(raw.get("type")) if isinstance(raw.get("type"), str) else None
        if kind is None:
            raise _Refused("unknown_type", f"no command type {str(raw.get('type'))[:40]!r}; see `help`")
        if size(raw) > kind.max_size:
            raise _Refused("command_too_large", f"a {kind.name} command holds at most {kind.max_size} characters")
        args = raw.get("args", {})
        if not isinstance(args, dict):
            raise _Refused("bad_args", "args is a JSON object")
        try:
            kind.schema.validate(args)
        except MeshnodeError as exc:
            raise _Refused("bad_args", exc.reason) from None
        unknown = set(args) - set(kind.schema.fields)
        if unknown:
            raise _Refused("bad_args", f"{kind.name} takes no {sorted(unknown)[0][:40]!r}")
        description, target = raw.get("description", ""), raw.get("target_llm")
        if not isinstance(description, str) or len(description) > 4096:
            raise _Refused("bad_command", "description is text of at most 4096 characters")
        if target is not None and (not isinstance(target, str) or len(target) > 128):
            raise _Refused("bad_command", "target_llm is a short name")
        task = raw.get("task_id")
        if task is not None and (type(task) is not int or not 0 <= task < 2**63):
            raise _Refused("bad_command", "task_id is the id of a task (an integer)")
    except _Refused as refusal:
        return CommandError(ident, refusal.code, refusal.reason)
    seen.add(ident)
    return Command(ident, kind.name, args, description, target, kind.mutating, task)


class _Refused(Exception):
    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code, self.reason = code, reason


def size(value: Any) -> int:
    """How much a decoded command holds: the characters of its strings and keys, 8 for any other
    value (escapes in the JSON it came as do not count). Called after the depth check."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return 2 + sum(len(str(k)) + size(v) for k, v in value.items())
    if isinstance(value, list):
        return 2 + sum(size(v) for v in value)
    return 8


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max([_depth(v, level + 1) for v in value.values()] or [level + 1])
    if isinstance(value, list):
        return max([_depth(v, level + 1) for v in value] or [level + 1])
    return level


# --- UnverifiedFacts ------------------------------------------------------------------


def _facts(answer: str) -> tuple[list[Fact], list[CommandError]]:
    facts, errors = [], []
    for marker in _FACTS.finditer(answer):
        values = _json_values(answer[marker.end(): marker.end() + FACTS_WINDOW], 1)
        if not values or not isinstance(values[0], list):
            errors.append(CommandError(None, "bad_facts", "UnverifiedFacts is followed by a JSON array"))
            continue
        for item in values[0][:MAX_FACTS]:
            fact = _fact(item)
            (facts.append(fact) if isinstance(fact, Fact) else errors.append(fact))
    return facts[:MAX_FACTS], errors


def _fact(item: Any) -> Fact | CommandError:
    if not isinstance(item, dict):
        return CommandError(None, "bad_fact", "an unverified fact is a JSON object")
    claim, confidence = item.get("claim"), item.get("confidence")
    if not isinstance(claim, str) or not claim.strip() or len(claim) > 4096:
        return CommandError(None, "bad_fact", "an unverified fact needs a claim (text)")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        return CommandError(None, "bad_fact", f"fact {claim[:40]!r}: confidence is a number in [0, 1]")
    sources = item.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(x, str) and len(x) <= 1024 for x in sources):
        return CommandError(None, "bad_fact", f"fact {claim[:40]!r}: sources is a list of text")
    priority = item.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 1000:
        return CommandError(None, "bad_fact", f"fact {claim[:40]!r}: priority is an integer 0..1000")
    return Fact(str(item.get("id", ""))[:64], claim, float(confidence), str(item.get("context", ""))[:4096],
                tuple(sources[:32]), str(item.get("why_unverified", ""))[:1024], priority)
