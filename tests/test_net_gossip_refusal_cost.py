"""A refused gossip message costs its validation, not a text dump of itself: py-libp2p 0.8.1
formats the whole message into each ValidationError (libp2p_fixes.validation_errors_without_the_message)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import trio

from meshnode.net import libp2p_fixes

DATA = os.urandom(200_000)


def _pubsub(validators, timeout: float = 5.0):
    from libp2p.pubsub.pubsub import Pubsub, ValidationCache

    async def run_async_validator(func, forwarder, msg, results):
        results.append(await func(forwarder, msg))

    return SimpleNamespace(
        _msg_id_constructor=lambda msg: msg.seqno + msg.from_id, validation_cache=ValidationCache(),
        get_msg_validators=lambda msg: validators, validation_timeout=timeout,
        _run_async_validator=run_async_validator, original=Pubsub.validate_msg)


def _msg(seqno: bytes):
    from libp2p.pubsub.pb import rpc_pb2
    return rpc_pb2.Message(data=DATA, topicIDs=["t"], seqno=seqno, from_id=b"peer")


def _validator(fn, is_async: bool):
    return SimpleNamespace(validator=fn, is_async=is_async)


async def _refuse(forwarder, msg):
    return False


async def _slow(forwarder, msg):
    await trio.sleep(10)
    return True


async def _accept(forwarder, msg):
    return True


@pytest.mark.parametrize("validator, error", [
    (_validator(lambda f, m: False, False), "Synchronous validation failed"),
    (_validator(_refuse, True), "Asynchronous validation failed"),
    (_validator(_slow, True), "Validation timeout"),
])
async def test_a_refusal_names_the_message_by_id_and_is_cached_as_before(validator, error):
    from libp2p.pubsub.pubsub import ValidationError

    pubsub = _pubsub((validator,), timeout=0.05)
    with pytest.raises(ValidationError) as before:  # py-libp2p's own: the whole message, as text
        await pubsub.original(pubsub, "relay", _msg(b"1"))
    assert len(str(before.value)) > len(DATA)  # why this fix exists (fails once py-libp2p stops it)
    libp2p_fixes.validation_errors_without_the_message(pubsub)
    with pytest.raises(ValidationError) as after:
        await pubsub.validate_msg("relay", _msg(b"2"))
    assert len(str(after.value)) < 200
    for seqno in (b"1", b"2"):  # both cached the same refusal, with the same reason
        cached = pubsub.validation_cache.get(seqno + b"peer")
        assert (cached.is_valid, cached.error_message) == (False, error)
    with pytest.raises(ValidationError, match="cached validation failed"):  # a copy: refused from the cache
        await pubsub.validate_msg("other", _msg(b"2"))


async def test_an_accepted_message_is_cached_valid_and_raises_nothing():
    pubsub = _pubsub((_validator(lambda f, m: True, False), _validator(_accept, True)))
    libp2p_fixes.validation_errors_without_the_message(pubsub)
    await pubsub.validate_msg("relay", _msg(b"3"))
    assert pubsub.validation_cache.get(b"3peer").is_valid
