"""Canonical identities (design 5): resolution order, unknown names, load errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from meshnode.engines.reactor.aliases import AliasError, AliasRegistry

SELF = "did:key:z6MkSELFxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
ISAAC = "did:key:z6Mkisaacxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
OLD = "did:key:z6Mkoldxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

TOML = f'''
[agents.self]
aliases = ["ductor", "nodus"]

[agents."{ISAAC}"]
aliases = ["isaac", "Isaac", "{OLD}"]

[agents.scout]
aliases = ["murr", "Scout"]
'''


@pytest.fixture
def reg(tmp_path):
    p = tmp_path / "aliases.toml"
    p.write_text(TOML)
    return AliasRegistry.load(p, self_id=SELF)


def test_resolution(reg):
    assert reg.resolve("self") == SELF and reg.resolve(SELF) == SELF
    assert reg.resolve("@Ductor") == SELF and reg.resolve("NODUS") == SELF
    assert reg.resolve("isaac") == ISAAC and reg.resolve(OLD) == ISAAC  # a rotated key
    assert reg.resolve("scout") == "scout" and reg.resolve("@MURR") == "scout"
    assert reg.resolve("ghost") is None and reg.resolve("") is None
    other = "did:key:z6Mkpeerxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    assert reg.resolve(other) == other  # a peer need not be registered
    assert reg.resolve("did:key:not-base58-0OIl") is None


def test_listing(reg):
    assert reg.canonical_ids() == sorted([SELF, ISAAC, "scout"])
    assert reg.aliases_of("scout") == ["murr", "Scout"]
    assert reg.aliases_of(SELF) == ["ductor", "nodus"]


def test_missing_file_is_empty(tmp_path):
    reg = AliasRegistry.load(tmp_path / "none.toml", self_id=SELF)
    assert reg.canonical_ids() == [SELF] and reg.resolve("ductor") is None


def test_alias_naming_two_agents_is_an_error_naming_both(tmp_path):
    p = tmp_path / "aliases.toml"
    p.write_text('[agents.self]\naliases = ["murr"]\n[agents.scout]\naliases = ["@Murr"]\n')
    with pytest.raises(AliasError) as exc:
        AliasRegistry.load(p, self_id=SELF)
    assert str(p) in exc.value.reason and SELF in exc.value.reason and "scout" in exc.value.reason


@pytest.mark.parametrize("text", ["[agents", "agents = 3", '[agents.self]\naliases = "x"', '[agents."Bad Name"]'])
def test_malformed_files_raise_alias_error(tmp_path, text):
    p = tmp_path / "aliases.toml"
    p.write_text(text)
    with pytest.raises(AliasError) as exc:
        AliasRegistry.load(p, self_id=SELF)
    assert str(p) in exc.value.reason


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=12)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(names, st.lists(names, max_size=4), max_size=6))
def test_every_alias_resolves_to_its_agent_or_loading_fails(agents):
    try:
        reg = AliasRegistry(agents, self_id=SELF)
    except AliasError:
        return
    for cid, aliases in agents.items():
        target = SELF if cid == "self" else cid
        for alias in aliases:
            assert reg.resolve(alias) == target
            assert reg.resolve("@" + alias.upper()) == target


def test_a_file_that_is_not_utf8_is_an_alias_error_naming_it(tmp_path):
    path = tmp_path / "aliases.toml"
    path.write_bytes(b'[agents.self]\naliases = ["\xff\xfe"]\n')
    with pytest.raises(AliasError) as exc:  # was UnicodeDecodeError: every scan failed, the old registry unused
        AliasRegistry.load(path, self_id="did:key:z6MkSelf")
    assert "aliases.toml" in exc.value.reason and "UTF-8" in exc.value.reason
