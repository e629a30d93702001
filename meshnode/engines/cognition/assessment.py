"""The anti-stagnation mini-query (seed 000, step 5): the LLM compares its new answer with the last.

Without the full context, the main LLM is asked for a JSON object:
``assessment`` (a sentence), ``novelty_score`` (0..1), ``new_ideas``,
``refined_ideas``, ``discarded_ideas``, ``tags`` and ``emotions`` as
``"name:1..5"``. The reply is read strictly (sizes, types, ranges); a reply
that does not fit is ignored and the local novelty measure stands alone. The
list of known emotions lives in the agent's ``config`` (``cognition.emotions``)
and grows when new ones appear.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MARKER = "ANTI-STAGNATION ASSESSMENT"
DEFAULT_EMOTIONS = ["curiosity", "confidence", "doubt", "anxiety", "enthusiasm", "fatigue", "calm"]
PROMPT = (f"{MARKER}. Compare the previous answer and the new one. Reply with one JSON object only: "
          '{"assessment": "<one sentence>", "novelty_score": <0..1>, "new_ideas": ["..."], '
          '"refined_ideas": ["..."], "discarded_ideas": ["..."], "tags": ["..."], '
          '"emotions": ["<name>:<1..5>", ...]}. Known emotions: ')
_EMOTION = re.compile(r"([^\W\d_][\w -]{0,31}):([1-5])", re.UNICODE)
MAX_ITEMS, MAX_TEXT = 16, 500


@dataclass(frozen=True)
class Assessment:
    assessment: str
    novelty_score: float
    new_ideas: tuple[str, ...]
    refined_ideas: tuple[str, ...]
    discarded_ideas: tuple[str, ...]
    tags: tuple[str, ...]
    emotions: tuple[tuple[str, int], ...]


def prompt(known_emotions: list[str], previous: str, new: str) -> list[dict]:
    return [{"role": "system", "content": PROMPT + ", ".join(known_emotions)},
            {"role": "user", "content": f"# Previous answer\n{previous[:8000]}\n\n# New answer\n{new[:8000]}"}]


def _texts(value, limit: int = MAX_TEXT) -> tuple[str, ...] | None:
    if not isinstance(value, list) or len(value) > MAX_ITEMS or not all(isinstance(x, str) for x in value):
        return None
    return tuple(x.strip()[:limit] for x in value if x.strip())


def parse(reply: str) -> Assessment | None:
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(reply[start: end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    score = data.get("novelty_score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return None
    lists = {k: _texts(data.get(k, [])) for k in ("new_ideas", "refined_ideas", "discarded_ideas")}
    tags = _texts(data.get("tags", []), 64)
    raw_emotions = _texts(data.get("emotions", []), 40)
    if None in lists.values() or tags is None or raw_emotions is None:
        return None
    emotions = tuple((m.group(1).strip().lower(), int(m.group(2))) for m in map(_EMOTION.fullmatch, raw_emotions) if m)
    text = data.get("assessment", "")
    return Assessment(text.strip()[:MAX_TEXT] if isinstance(text, str) else "", float(score), lists["new_ideas"],
                      lists["refined_ideas"], lists["discarded_ideas"], tags, emotions)


def grow(known: list[str], assessment: Assessment) -> list[str]:
    """The known emotions with the new ones this assessment named (at most 64 in all)."""
    out = list(known)
    for name, _ in assessment.emotions:
        if name not in out and len(out) < 64:
            out.append(name)
    return out
