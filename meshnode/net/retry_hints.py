"""Retry hints kept: a stranger told to push again later that pushes sooner ignores back-pressure
(sans-IO, time passed in).

Why: refusing a push for load costs little, but the push has already been sent and read by then
(its bytes through Noise and yamux, its frame parsed): a peer that pushes again as soon as it is
refused, as a flood does, makes the node read and refuse as fast as it can send. Issue 36 measured
1,426 pushes of 16 x 8 KiB in 25 s from 4 identities on one address, every one answered ``busy``:
0.78 of a core, although the strangers' CPU budget is 0.15. So each refusal of a stranger's push
with a ``retry_ms`` hint is remembered (``told``); a push that comes before its hint has elapsed
is refused as soon as it is parsed (``early``), and beyond ``tolerated`` such pushes per hint
(pushes already on their way when the hint was sent) each counts as invalid input of ``weight``:
with the defaults (20 to a cut-off) the fifth early push after one hint cuts the identity off.
Known peers are never told here (the caller does not ask). At most ``remembered`` hints are kept,
the least recently used forgotten first (a forgotten hint only forgives).
"""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.net.budget import BoundedLRU


@dataclass(frozen=True)
class RetryLimits:
    tolerated: int = 1  # [peers] early_pushes_tolerated: one push already under way when the hint went out
    weight: float = 5.0  # [peers] early_push_weight: a quarter of invalid_threshold (20): the 4th counted
    #                      early push cuts the identity off (an honest client waits: it is never counted)
    remembered: int = 4096  # [peers] max_records


@dataclass
class Hint:
    until_ms: int
    early: int = 0  # pushes that came before ``until_ms``


class RetryHints:
    def __init__(self, limits: RetryLimits = RetryLimits()):
        self.limits = limits
        self._hints: BoundedLRU[Hint] = BoundedLRU(limits.remembered)

    def told(self, peer: str, retry_ms: int, now_ms: int) -> None:
        """``peer`` was told to push again in ``retry_ms`` at the earliest (a new hint: its count of
        early pushes starts again)."""
        self._hints.put(peer, Hint(now_ms + max(1, int(retry_ms))), now_ms)

    def early(self, peer: str, now_ms: int) -> tuple[int, bool] | None:
        """None when ``peer`` may push now; else (ms until it may, whether this push counts as
        invalid input: past ``tolerated`` early pushes under one hint)."""
        hint = self._hints.peek(peer)
        if hint is None:
            return None
        if now_ms >= hint.until_ms:
            self._hints.pop(peer)
            return None
        hint.early += 1
        return hint.until_ms - now_ms, hint.early > self.limits.tolerated

    def __len__(self) -> int:
        return len(self._hints)
