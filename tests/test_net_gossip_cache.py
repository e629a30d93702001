"""Gossip refusals pubsub caches that are no fault of the data (a validation timeout, a validator
that raised) are neither held against later forwarders nor kept (libp2p_fixes)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import trio

from meshnode.net import libp2p_fixes


def _pubsub(results: dict):
    from libp2p.pubsub.pubsub import ValidationCache, ValidationResult

    cache = ValidationCache()
    for msg_id, error in results.items():
        cache.put(msg_id, ValidationResult(is_valid=False, timestamp=time.time(), error_message=error))

    class FakePubsub:
        host = SimpleNamespace(get_id=lambda: "me")
        strict_signing = False
        validation_cache = cache

        @staticmethod
        def _is_msg_seen(msg):
            return False

        @staticmethod
        def _msg_id_constructor(msg):
            return msg

        async def push_msg(self, forwarder, msg):
            return None

    return FakePubsub()


def test_timed_out_or_failed_validation_is_not_invalid_again_and_is_forgotten():
    pubsub = _pubsub({b"slow": "Validation timeout", b"raised": "Validation error: boom",
                      b"bad": "Asynchronous validation failed"})
    refused = []
    libp2p_fixes.count_gossip_refused_unseen(pubsub, lambda f, code: refused.append((f, code)))
    libp2p_fixes.forget_ignored(pubsub, lambda msg: False)

    async def main():
        for msg in (b"slow", b"raised", b"bad"):
            await pubsub.push_msg("relay", msg)

    trio.run(main)
    assert refused == [("relay", "invalid_again")]  # only the data that failed validation
    assert set(pubsub.validation_cache.cache) == {b"bad"}  # the others are validated afresh next time
