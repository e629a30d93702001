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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from meshnode.cognition.llm import Endpoint, LLMError, chat
from meshnode.reputation.weights import validator_rating

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


async def validate(validators: list[tuple[Endpoint, float]], prompt: str, answer: str, main_id: str) -> Verdict:
    """Ask every validator; (endpoint, trust) pairs. No validators: auto_pass."""
    if not validators:
        return Verdict(auto_pass=True, rating=None)
    said = []
    for endpoint, trust in validators:
        try:
            reply = await chat(endpoint, [{"role": "system", "content": PROMPT},
                                          {"role": "user", "content": f"{prompt}\n\n# Answer to judge\n{answer}"}],
                               temperature=0.0, retries=1)
        except LLMError:
            continue
        verdict = parse(reply)
        if verdict is not None:
            said.append({"validator": endpoint.id, "rating": verdict[0], "trust": trust, "comment": verdict[1]})
    rating = validator_rating((v["rating"], v["trust"]) for v in said) if said else None
    return Verdict(auto_pass=False, rating=rating, validators=said,
                   self_validation=any(v["validator"] == main_id for v in said))
