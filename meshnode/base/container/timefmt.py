"""Container time: RFC 3339 UTC text with exactly three fraction digits.

``2026-11-30T07:37:56.123Z`` and nothing else: one instant has one spelling,
so timestamps inside signed bytes stay deterministic, and text sorts in time
order. Internally times are integer milliseconds since the Unix epoch.
"""

from __future__ import annotations

import calendar
import functools
import re
import time

from meshnode.base.container.errors import ContainerError

_PATTERN = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")


MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last time the format can spell


def format_ms(ms: int) -> str:
    if type(ms) is not int or not 0 <= ms <= MAX_MS:
        raise ContainerError("bad_field", f"time {ms!r} ms is outside 1970-01-01 .. 9999-12-31")
    seconds, millis = divmod(ms, 1000)
    return _format_seconds(seconds) + _MILLIS[millis]


_MILLIS = [f".{millis:03d}Z" for millis in range(1000)]


@functools.lru_cache(maxsize=256)
def _format_seconds(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def parse_ms(text: object, field: str = "timestamp") -> int:
    """Parse container time text to epoch milliseconds; ContainerError(bad_field) if invalid."""
    if type(text) is str and _PATTERN.fullmatch(text) is not None:
        minute = _MINUTES.get(text[:16])  # every container of a minute shares its date and hour
        if minute is not None:
            second = int(text[17:19])
            if second <= 59:
                return minute + second * 1000 + int(text[20:23])
    return _parse_ms(text, field)


_MINUTES: dict[str, int] = {}  # "YYYY-MM-DDTHH:MM" -> epoch ms, for valid minutes only
_MINUTES_MAX = 4096


def _parse_ms(text: object, field: str) -> int:
    if not isinstance(text, str):
        raise ContainerError("bad_structure", f"{field} must be text")
    m = _PATTERN.fullmatch(text)
    if m is None:
        raise ContainerError("bad_field", f"{field} {text[:40]!r} is not YYYY-MM-DDTHH:MM:SS.mmmZ")
    days = _epoch_day(text[:10])
    hour, minute, second, millis = int(m[4]), int(m[5]), int(m[6]), int(m[7])
    if days is None or hour > 23 or minute > 59 or second > 59:
        raise ContainerError("bad_field", f"{field} {text!r} is not a valid UTC time")
    minute_ms = ((days * 24 + hour) * 60 + minute) * 60_000
    if len(_MINUTES) >= _MINUTES_MAX:
        _MINUTES.clear()  # bounded: 4096 entries of 16 characters
    _MINUTES[text[:16]] = minute_ms
    return minute_ms + second * 1000 + millis


@functools.lru_cache(maxsize=1024)
def _epoch_day(date: str) -> int | None:
    """Days since 1970-01-01 for a valid YYYY-MM-DD (1970 or later), else None."""
    year, month, day = int(date[:4]), int(date[5:7]), int(date[8:10])
    if year < 1970 or not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    return calendar.timegm((year, month, day, 0, 0, 0, 0, 0, 0)) // 86400


def now_ms() -> int:
    return time.time_ns() // 1_000_000
