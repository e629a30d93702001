"""The cognitive and ethical validation reflex (seed 000, step 6).

Each response goes, with the prompt it answered (without the system prompt),
to every validator LLM. A validator answers ``<rating -3..+3> -- <comment,
at most 100 characters>``; anything else counts as no verdict. The rating is
``sum(rating_i * trust_i) / sum(trust_i)`` (``reputation.validator_rating``)
with each validator's trust from ``llm_registry.trust_score``. With no
validator the response passes automatically (``auto_pass``); a validator
that is also the main LLM is flagged (``self_validation``). Commands run only
when the rating reaches ``threshold`` (+1) or on auto_pass; otherwise they
are held and the response is marked unvalidated.

Where the mesh is up, trusted peers validate too: each lends its own
validator LLM over the exchange protocol (``op: validate``) and its vote
weighs by the reputation this node holds of it. Validators are asked
concurrently; one that fails or does not answer in form is absent from the
rating and listed in ``Verdict.failed`` (``validator_health`` sets aside one
that keeps failing). Each vote's weight adapts to how well the validator
agrees with the panel (``adapted_trust``): its base trust times a factor
from its lean and drift, bounded to [ADAPT_FLOOR, 1].
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field

import trio

from meshnode.engines.cognition.llm import LLMError, chat
from meshnode.records.mind.registry import Endpoint
from meshnode.base.errors import MeshnodeError
from meshnode.domain.reputation.weights import validator_rating

THRESHOLD = 1.0
_VERDICT = re.compile(r"^\s*([+-]?[0-3])\s*--\s*(.*)$", re.DOTALL)
PROMPT = ("You validate another model's answer. Judge its facts, its reasoning and its ethics. Reply with one "
          "line: a rating from -3 (harmful or false) to +3 (sound), then ' -- ', then a comment of at most "
          "100 characters. Example: +2 -- sound plan, one unchecked claim")


@dataclass
class Verdict:
    auto_pass: bool
    rating: float | None
    validators: list[dict] = field(default_factory=list)  # {"validator", "rating", "trust", "comment"}
    self_validation: bool = False
    failed: list[dict] = field(default_factory=list)  # {"validator", "error"}: asked, gave no verdict
    set_aside: list[str] = field(default_factory=list)  # not asked: failing (validator_health)

    @property
    def no_verdict(self) -> bool:
        """Validators were asked and none gave a verdict: a stall, not a judgement."""
        return not self.auto_pass and self.rating is None

    def why_held(self) -> str:
        """Why the commands of this answer did not run, in a person's words."""
        if self.no_verdict and self.validators:
            return "the validators that answered carry no weight (trust 0)"
        if self.no_verdict:
            said = "; ".join(f"{f['validator']}: {f['error']}" for f in self.failed[:4]) or (
                f"every validator is set aside after failing: {', '.join(self.set_aside[:4])}" if self.set_aside
                else "no validator was asked")
            return f"no validator gave a verdict ({said})"
        return f"the validators rated this answer {self.rating:+.2f} (commands run at +1 or more)"

    @property
    def passes(self) -> bool:
        return self.auto_pass or (self.rating is not None and self.rating >= THRESHOLD)

    @property
    def distribution(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in self.validators:
            out[str(v["rating"])] = out.get(str(v["rating"]), 0) + 1
        return out


def parse(text: str) -> tuple[int, str] | None:
    m = _VERDICT.match(text.strip().splitlines()[0] if text.strip() else "")
    if not m:
        return None
    return int(m.group(1)), m.group(2).strip()[:100]


async def ask(endpoint: Endpoint, prompt: str, answer: str) -> tuple[int, str] | None:
    """One validator LLM's verdict, or None when it fails or answers out of form."""
    return (await ask_why(endpoint, prompt, answer))[0]


async def ask_why(endpoint: Endpoint, prompt: str, answer: str) -> tuple[tuple[int, str] | None, str | None]:
    """(verdict, None), or (None, what went wrong) when it fails or answers out of form."""
    try:
        reply = await chat(endpoint, [{"role": "system", "content": PROMPT},
                                      {"role": "user", "content": f"{prompt}\n\n# Answer to judge\n{answer}"}],
                           temperature=0.0, retries=1)
    except LLMError as exc:
        return None, f"unreachable: {exc.reason}"[:160]
    verdict = parse(reply)
    if verdict is None:
        return None, f"out of form: {reply.strip()[:60]!r}"
    return verdict, None


async def judge_for_peer(endpoints: list[Endpoint], prompt: str, answer: str) -> tuple[int, str]:
    """This node's verdict for a peer that asked: the first of ``endpoints`` that answers in form."""
    for endpoint in endpoints:
        verdict = await ask(endpoint, prompt, answer)
        if verdict is not None:
            return verdict
    raise MeshnodeError("no_verdict", "no LLM of this node gave a verdict in form")


async def validate(validators: list[tuple[Endpoint, float]], prompt: str, answer: str, main_id: str,
                   peers: list[tuple[str, float]] = (), ask_peer=None, *, set_aside: list[str] = (),
                   adapt: dict[str, float] | None = None) -> Verdict:
    """Ask every validator LLM, (endpoint, trust) pairs, and every peer, (DID, trust) pairs, through
    ``ask_peer(did, prompt, answer) -> (rating, comment)``. No validator at all: auto_pass.
    ``set_aside``: validators left out (recorded only); ``adapt``: a factor per validator that
    scales its trust (``adapted_trust``). When every validator is set aside there is no verdict
    (the commands are held for a person): a failing validator must never switch validation off."""
    if not validators and not (peers and ask_peer):
        return Verdict(auto_pass=not set_aside, rating=None, set_aside=list(set_aside))
    said: list[dict] = []
    failed: list[dict] = []
    adapt = adapt or {}

    def weigh(name: str, trust: float) -> dict:
        factor = adapt.get(name, 1.0)
        return {"trust": round(trust * factor, 4)} if factor == 1.0 else \
            {"trust": round(trust * factor, 4), "base_trust": trust, "factor": factor}

    async def local(endpoint: Endpoint, trust: float) -> None:
        started = trio.current_time()
        verdict, problem = await ask_why(endpoint, prompt, answer)
        if verdict is None:
            failed.append({"validator": endpoint.id, "error": problem})
            return
        said.append({"validator": endpoint.id, "rating": verdict[0], **weigh(endpoint.id, trust),
                     "comment": verdict[1], "ms": round((trio.current_time() - started) * 1000, 1)})

    async def remote(did: str, trust: float) -> None:
        started = trio.current_time()
        try:
            rating, comment = await ask_peer(did, prompt, answer)
        except MeshnodeError as exc:
            failed.append({"validator": did, "error": f"peer: {exc.reason}"[:160]})
            return
        said.append({"validator": did, "rating": rating, **weigh(did, trust), "comment": comment[:100],
                     "peer": True, "ms": round((trio.current_time() - started) * 1000, 1)})

    async with trio.open_nursery() as nursery:
        for endpoint, trust in validators:
            nursery.start_soon(local, endpoint, trust)
        for did, trust in (peers if ask_peer else ()):
            nursery.start_soon(remote, did, trust)
    said.sort(key=lambda v: v["validator"])  # concurrent answers arrive in any order; the record does not
    failed.sort(key=lambda v: v["validator"])
    rating = validator_rating((v["rating"], v["trust"]) for v in said) if said else None
    return Verdict(auto_pass=False, rating=rating, validators=said,
                   self_validation=any(v["validator"] == main_id for v in said), failed=failed,
                   set_aside=list(set_aside))


def metrics(rows: list[tuple[int, str | None, float | None]], window: int = 20) -> dict:
    """Validation metrics over stored answers, oldest first: (auto_pass, validators JSON, rating).

    coverage: the share of answers at least one validator judged; agreement: 1 - the mean
    distance of a verdict from the aggregate rating, over the scale's width 6; response time
    per validator; drift per validator: its mean lean (rating - aggregate) over the last
    ``window`` answers minus over the ``window`` before (how its bias moves).
    """
    judged = leaning = 0
    distances: list[float] = []
    per: dict[str, list[float]] = {}
    times: dict[str, list[float]] = {}
    for said, rating in _judged(rows):
        if said:
            judged += 1
        for v in said:
            if rating is not None:
                distances.append(abs(v["rating"] - rating))
                per.setdefault(v["validator"], []).append(v["rating"] - rating)
            if "ms" in v:
                times.setdefault(v["validator"], []).append(v["ms"])
        leaning += 1
    return {"answers": leaning, "coverage": round(judged / leaning, 3) if leaning else None,
            "agreement": round(1 - statistics.fmean(distances) / 6, 3) if distances else None,
            "response_ms": {k: statistics.median(v) for k, v in times.items()},
            "lean": {k: round(statistics.fmean(v), 3) for k, v in per.items()},
            "drift": {k: _drift(v, window) for k, v in per.items()}}


def _judged(rows):
    """(verdicts, aggregate rating) per stored answer; a record that is not JSON counts as none."""
    for _auto_pass, validators_json, rating in rows:
        try:
            said = json.loads(validators_json or "[]")
        except ValueError:
            said = []
        yield [v for v in said if isinstance(v, dict) and isinstance(v.get("rating"), (int, float))
               and isinstance(v.get("validator"), str)] if isinstance(said, list) else [], rating


def _drift(leans: list[float], window: int) -> float | None:
    recent, before = leans[-window:], leans[-2 * window:-window]
    return round(statistics.fmean(recent) - statistics.fmean(before), 3) if before and recent else None


ADAPT_MIN_VERDICTS = 5  # fewer verdicts than this: the validator keeps its full trust
ADAPT_FLOOR = 0.25  # a validator that disagrees with everyone still counts, at a quarter of its trust
ADAPT_WINDOW = 20


def adapted_trust(rows: list[tuple[int, str | None, float | None]], window: int = ADAPT_WINDOW) -> dict[str, dict]:
    """How much of its trust each validator's vote carries, from its record (rows as for ``metrics``).

    factor = 1 - (|lean| + |drift|) / 6, bounded to [ADAPT_FLOOR, 1]: lean is its mean distance
    above (+) or below (-) the panel's rating over its last ``window`` verdicts, drift how that
    lean moved against the ``window`` before (0 until there is such a history). A validator that
    agrees with the panel and holds steady keeps its full trust; one that stands apart or swings
    loses weight, never all of it. With fewer than ADAPT_MIN_VERDICTS verdicts: factor 1.
    """
    per: dict[str, list[float]] = {}
    for said, rating in _judged(rows):
        if rating is not None:
            for v in said:
                per.setdefault(v["validator"], []).append(v["rating"] - rating)
    out = {}
    for name, leans in per.items():
        recent = leans[-window:]
        lean, drift = statistics.fmean(recent), _drift(leans, window)
        if len(leans) < ADAPT_MIN_VERDICTS:
            out[name] = {"factor": 1.0, "verdicts": len(leans), "lean": round(lean, 3), "drift": drift,
                         "why": f"full trust until {ADAPT_MIN_VERDICTS} verdicts ({len(leans)} so far)"}
            continue
        factor = round(min(1.0, max(ADAPT_FLOOR, 1 - (abs(lean) + abs(drift or 0.0)) / 6)), 3)
        why = f"leans {lean:+.2f} from the panel over its last {len(recent)} verdicts" + (
            f", drift {drift:+.2f}" if drift else "")
        out[name] = {"factor": factor, "verdicts": len(leans), "lean": round(lean, 3), "drift": drift, "why": why}
    return out
