"""Format 2 of sync reconciliation (``/meshnode/sync/2.0.0``): range-based, sized to the sets, sans-IO.

Theory of operation
-------------------
Each side holds the set of 32-byte ids it may share with this peer (nothing
private is ever named). Ids are uniform, so the space is cut at fixed points:
a range is a bit prefix (``hash_index``), a split into 2^b children adds b
bits, and no bound ever travels. The fingerprint of a range is
SHA-256(attempt, sum of its ids mod 2^256, count) cut to ``f`` bytes (4 for
ordinary sets: the first message says which).

A message answers, in order, every range the peer split in its previous
message (a *unit*): ``0`` (nothing more to do), the sender's ids in the whole
unit (the peer learns both sides of it), or the children that still differ as
``[index, answer, ...]`` pairs, where a child's answer is the sender's ids
there or a new split of it. A split may carry the sender's (count, sum, check) of
the range: when the counts differ by one, the difference of the sums is the
missing id if only one differs, and the check (a sum of squares,
``hash_index``) tells whether it is, so a single difference costs one sum
instead of a list. The first message is the root split with its count and
sum (or the ids, for a set of at most two).

Sizes: the root splits in 4 to 64 (from the opener's count); every later
split is chosen from the share of fingerprints that differed in the message
being answered (an estimate of differences per range, Poisson): about one
difference a child, a sum when one is expected, ids when they are no dearer.

The end, and collisions: a message that splits nothing is *final* and
carries ``e``, the sender's account of the differences found (see
``_expected``); its receiver checks it against its own (sums mod 2^256, which
do not collide) and answers null (agreed: the pass is over) or, when a short
fingerprint collided and hid a difference, restarts the pass once with
16-byte fingerprints and another salt. What each side found stays found.
"""

from __future__ import annotations

import hashlib
import math

from meshnode.domain.sync.hash_index import BITS, CHECK_MOD, MOD, HashIndex
from meshnode.domain.sync.index_cache import IndexCache
from meshnode.domain.sync.rbsr_wire import (CHECK, ID, MAX_FP, MAX_IDS, Limits, Unit, check_final, check_ids,
                                     check_message, check_open, check_unit, encode_ids)
from meshnode.domain.sync.reconcile import ReconcileError

MAX_MESSAGES = 2 * BITS + 8  # every answer goes at least one bit deeper
IDS_BUDGET = MAX_IDS // 2  # ids this side lists in one message; beyond, ranges are split instead
SINGLE = 1.5  # expected differences in a differing range, up to which a sum is sent
ROOT_CHECK_MAX = 1 << 18  # the root's check costs a pass over every id: not for larger sets


def fp_bytes(count: int) -> int:
    """Fingerprint length for a set of ``count``: misses (2^-8f a differing range) only cost a restart."""
    return 3 if count < 4096 else 4 if count < 1 << 24 else 5


def root_bits(count: int) -> int:
    return max(2, min(6, round(math.log2(max(count, 2)) / 3)))


class Rbsr:
    """One side of one pass. ``initiate`` (the initiator) gives the first message; ``receive`` answers
    each message of the peer (None: the pass is over, send null); ``peer_ended`` takes the peer's null.
    ``have``: ids the peer lacks; ``need``: ids this side lacks. ``fp_len``: a test hook. ``indexes``: the
    node's index kept between sessions (``index_cache``); without it the ids are indexed here."""

    def __init__(self, ids: list[bytes], initiator: bool, fp_len: int | None = None,
                 indexes: IndexCache | None = None) -> None:
        self.index = HashIndex(ids) if indexes is None else indexes.index_for(ids)
        self.initiator = initiator
        self.fp_len = fp_len or fp_bytes(self.index.count)
        self.have: set[bytes] = set()
        self.need: set[bytes] = set()
        self.rounds = 0
        self.attempt = 1
        self.restarts = 0
        self._state = "idle"  # -> running -> final (sent a final message) -> done
        self._sent: list[tuple[int, int, int]] = []  # (depth, prefix, bits) of the splits last sent
        self._delta = (0, 0)  # initiator minus responder (count, sum): the responder learns it first
        self._found = [0, 0]  # differences found here this attempt, as initiator minus responder
        self._ids_sent = 0

    # --- entry points ----------------------------------------------------------------

    def initiate(self) -> dict:
        self._state = "running"
        return self._opening()

    def receive(self, data: object) -> dict | None:
        self.rounds += 1
        if self.rounds > MAX_MESSAGES or self._state == "done":
            raise ReconcileError("a message after the pass ended, or past the longest pass")
        message = check_message(data)
        if self._state == "final":  # not null: the peer found our accounts differ and restarts
            if message.get("a") != self.attempt + 1 or "f" not in message:
                raise ReconcileError("after a final message only null or a restart may come")
            self._restart(message["f"])
            return self._answer_opening(message)
        if self._state == "idle":
            if "f" not in message or "a" in message:
                raise ReconcileError("the first message gives 'f' and no 'a'")
            self.fp_len, self._state = message["f"], "running"
            return self._answer_opening(message)
        if "f" in message or "a" in message:
            raise ReconcileError("'f' and 'a' open a pass; this one is under way")
        units = self._take_answers(message["r"])
        return self._conclude(message, units)

    def peer_ended(self) -> None:
        if self._state != "final":
            raise ReconcileError("the peer ended a pass that was not reconciled")
        self._state = "done"

    # --- openings and ends ---------------------------------------------------------------

    def _opening(self) -> dict:
        self._ids_sent = 0
        c, s = self.index.count, self.index.total
        message: dict = {"f": self.fp_len, "r": [self._describe(0, 0, c, s, 1.0, bits=root_bits(c), total=True)]}
        if self.attempt > 1:
            message["a"] = self.attempt
        if not self._sent:  # the root went as ids: nothing left to ask
            message["e"] = self._final_account()
            self._state = "final"
        return message

    def _answer_opening(self, message: dict) -> dict | None:
        if len(message["r"]) != 1:
            raise ReconcileError("an opening describes the root, and only it")
        limits = Limits()
        root = message["r"][0]
        c, s = self.index.count, self.index.total
        if type(root) is bytes:
            theirs = check_ids(root, 0, 0, limits)
            peer = (len(theirs), sum(theirs) % MOD)
            self._learn(self.index.members(0, 0), theirs)
            units = []
        else:
            unit = check_unit(root, 0, 0, self.fp_len, limits)
            if unit.total is None:
                raise ReconcileError("the root's split carries its count and sum")
            peer, units = unit.total[:2], [unit]
        if not self.initiator:
            self._delta = (peer[0] - c, (peer[1] - s) % MOD)
        return self._conclude(message, units)

    def _conclude(self, message: dict, units: list[Unit]) -> dict | None:
        if "e" in message:
            if units:
                raise ReconcileError("a final message splits nothing")
            if check_final(message["e"]) == self._account():
                self._state = "done"
                return None
            if self.attempt > 1:
                raise ReconcileError("the sets still differ after a restart with 16-byte fingerprints")
            self._restart(MAX_FP)
            return self._opening()
        if not units:
            raise ReconcileError("a message that splits nothing is final and carries 'e'")
        return self._answer(units)

    def _restart(self, fp_len: int) -> None:
        self.attempt += 1
        self.restarts += 1
        self.fp_len, self._found, self._sent, self._state = fp_len, [0, 0], [], "running"
        self.have, self.need = set(), set()  # found again, and nothing a collision misled stays

    def _account(self) -> tuple[int, int]:
        """What the initiator must have found: the initiator's is what it found, the responder's what
        the whole difference (it knows both roots) leaves once its own findings are taken out."""
        count, total = self._found
        if not self.initiator:
            count, total = self._delta[0] - count, self._delta[1] - total
        return count, total % MOD

    def _final_account(self) -> list:
        count, total = self._account()
        return [count, total.to_bytes(ID)]

    # --- answering -------------------------------------------------------------------------

    def _take_answers(self, answers: list) -> list[Unit]:
        """The peer's answers to our splits: learn from its ids, collect its new splits."""
        if len(answers) != len(self._sent):
            raise ReconcileError(f"{len(answers)} answers to {len(self._sent)} splits")
        limits = Limits()
        units: list[Unit] = []
        for (depth, prefix, bits), answer in zip(self._sent, answers):
            if answer == 0 and type(answer) is int:
                continue
            if type(answer) is bytes:
                self._learn(self.index.members(depth, prefix), check_ids(answer, depth, prefix, limits))
            elif type(answer) is list:
                for j, child in check_open(answer, bits):
                    d, p = depth + bits, (prefix << bits) | j
                    if type(child) is bytes:
                        self._learn(self.index.members(d, p), check_ids(child, d, p, limits))
                    else:
                        units.append(check_unit(child, d, p, self.fp_len, limits))
            else:
                raise ReconcileError("an answer is 0, ids or the children that differ")
        self._sent = []
        return units

    def _answer(self, units: list[Unit]) -> dict:
        self._ids_sent = 0
        plans: list = []
        compared = differing = 0
        empty = self._fp(0, 0)
        f = self.fp_len
        for u in units:
            c, s = self.index.count_and_sum(u.depth, u.prefix)
            if u.total is not None and ((c, s) == u.total[:2] or self._decode(u, c, s)):
                plans.append(0)
                continue
            if c <= 1:
                plans.append(self._ids(u.depth, u.prefix))
                continue
            children = []
            d = u.depth + u.bits
            counts, sums = self.index.children(u.depth, u.prefix, u.bits)
            for j, (cj, sj) in enumerate(zip(counts, sums)):
                p = (u.prefix << u.bits) | j
                theirs = u.fps[j * f:(j + 1) * f]
                compared += 1
                if theirs == self._fp(cj, sj):
                    continue
                differing += 1
                if theirs == empty:  # the peer holds nothing there
                    self._learn(self.index.members(d, p), [])
                else:
                    children.append((j, d, p, cj, sj))
            plans.append(children)
        per_range = _differences_per_range(compared, differing)
        out = []
        for plan in plans:
            if type(plan) is list:
                out.append([x for j, d, p, c, s in plan for x in (j, self._describe(d, p, c, s, per_range))])
            else:
                out.append(plan)
        message: dict = {"r": out}
        if not self._sent:
            self._state = "final"
            message["e"] = self._final_account()
        return message

    def _describe(self, depth: int, prefix: int, c: int, s: int, expected: float, bits: int = 0,
                  total: bool = False):
        """This side's description of a range the peer must learn about: ids, or a split."""
        many = expected > SINGLE
        if c <= 1 or depth >= BITS or (2 * expected >= c and self._ids_sent + c <= IDS_BUDGET):
            return self._ids(depth, prefix)
        if not bits:
            bits = max(1, min(8, math.ceil(math.log2(2 * expected)))) if many else 2
            total = not many
        bits = min(bits, BITS - depth)
        fps = b"".join(map(self._fp, *self.index.children(depth, prefix, bits)))
        self._sent.append((depth, prefix, bits))
        if not total:
            return [bits, fps]
        if c > ROOT_CHECK_MAX:
            return [bits, fps, c, s.to_bytes(ID)]
        return [bits, fps, c, s.to_bytes(ID), self.index.check(depth, prefix).to_bytes(CHECK)]

    def _ids(self, depth: int, prefix: int) -> bytes:
        members = self.index.members(depth, prefix)
        self._ids_sent += len(members)
        return encode_ids(members)

    def _decode(self, u: Unit, c: int, s: int) -> bool:
        """A range that differs by one id: the difference of the sums, confirmed by the check (the
        sums of squares, which several differences adding up to an id do not match)."""
        count, total, check = u.total
        if check is None or c > ROOT_CHECK_MAX:  # the check costs a pass over the range: not for large ones,
            return False                         # whatever a peer sends (a 300-byte message, 0.35 s at 1M)
        if count - c == 1:
            z, sign = (total - s) % MOD, 1
            if z in self.index:
                return False
        elif c - count == 1:
            z, sign = (s - total) % MOD, -1
            if z not in self.index:
                return False
        else:
            return False
        if u.depth and z >> (BITS - u.depth) != u.prefix:
            return False
        top = z >> (BITS // 2)
        if (check - self.index.check(u.depth, u.prefix) - sign * top * top) % CHECK_MOD:
            return False
        self._learn([], [z]) if sign == 1 else self._learn([z], [])
        return True

    # --- bookkeeping -----------------------------------------------------------------------

    def _fp(self, count: int, total: int) -> bytes:
        return hashlib.sha256(bytes((self.attempt,)) + total.to_bytes(ID) + count.to_bytes(8)).digest()[:self.fp_len]

    def _learn(self, mine: list[int], theirs: list[int]) -> None:
        """Both sides of a range are known here: record what each lacks."""
        mine_set, theirs_set = set(mine), set(theirs)
        have = [x for x in mine if x not in theirs_set]
        need = [x for x in theirs if x not in mine_set]
        self.have.update(x.to_bytes(ID) for x in have)
        self.need.update(x.to_bytes(ID) for x in need)
        sign = 1 if self.initiator else -1
        self._found[0] += sign * (len(have) - len(need))
        self._found[1] += sign * (sum(have) - sum(need))


def _differences_per_range(compared: int, differing: int) -> float:
    """Expected differences in a range found differing, from the share that differed (Poisson);
    when all did, at least ln(n) + 1."""
    if not compared:
        return 1.0
    if differing >= compared:
        rate = math.log(compared) + 1
    else:
        rate = -math.log(1 - differing / compared)
    return rate / -math.expm1(-rate) if rate > 1e-9 else 1.0
