"""Hypothesis strategies for values meshnode may put in a container."""

from __future__ import annotations

from hypothesis import strategies as st

keys = st.text(max_size=12)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
    | st.binary(max_size=40)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=25,
)
maps = st.dictionaries(keys, values, max_size=6)
dids = st.builds(lambda b: "did:hmp:container:uEiA" + b.hex(), st.binary(min_size=4, max_size=8))
relations = st.dictionaries(st.sampled_from(["in_reply_to", "previous_version", "see_also", "x:custom"]),
                            st.lists(dids, min_size=1, max_size=3), max_size=3)
tags = st.lists(st.text(min_size=1, max_size=10), max_size=4)
