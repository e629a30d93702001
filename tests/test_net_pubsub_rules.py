"""The per-kind pubsub rules (net/pubsub_rules.py), sans-IO: the RPC and the time passed in."""

from __future__ import annotations

from libp2p.pubsub.pb import rpc_pb2

from meshnode.net.pubsub_rules import PubsubLimits, PubsubRules

OURS = "/meshnode/containers/1"
T0 = 1_000_000


def rules(**limits) -> PubsubRules:
    return PubsubRules(lambda topic: topic == OURS, PubsubLimits(**limits))


def reasons(refusals) -> dict:
    return {(r.kind, r.reason): (r.n, r.invalid) for r in refusals}


def publish(*topics: str, size: int = 100) -> rpc_pb2.RPC:
    return rpc_pb2.RPC(publish=[rpc_pb2.Message(data=b"x" * size, topicIDs=[t]) for t in topics])


def test_a_publish_on_a_topic_not_carried_is_dropped_and_invalid_weighed_by_its_bytes():
    rpc = publish(OURS, "/elsewhere", "/elsewhere", size=70_000)
    refusals = rules().check("p", False, rpc, T0)
    assert [m.topicIDs[0] for m in rpc.publish] == [OURS]
    assert reasons(refusals) == {("publish", "unknown_topic"): (2, True)} and refusals[0].nbytes == 140_000


def test_a_known_peer_is_not_held_to_a_rule_its_extra_is_only_dropped():
    rpc = publish("/elsewhere")
    assert reasons(rules().check("p", True, rpc, T0)) == {("publish", "unknown_topic"): (1, False)}
    assert len(rpc.publish) == 0


def subs(*pairs) -> rpc_pb2.RPC:
    return rpc_pb2.RPC(subscriptions=[rpc_pb2.RPC.SubOpts(subscribe=s, topicid=t) for s, t in pairs])


def test_subscriptions_in_one_frame_beyond_the_first_ones_are_refused():
    rpc = subs(*[(True, f"/t{i}") for i in range(5)])
    assert reasons(rules(subscriptions_per_frame=4).check("p", False, rpc, T0)) == \
        {("subscribe", "too_many_in_frame"): (1, True)}
    assert [s.topicid for s in rpc.subscriptions] == ["/t0", "/t1", "/t2", "/t3"]  # a hello lists ours first


def test_a_topic_name_past_its_length_is_refused():
    rpc = subs((True, "/ok"), (True, "/" + "x" * 300))
    assert reasons(rules().check("p", False, rpc, T0)) == {("subscribe", "topic_too_long"): (1, True)}
    assert [s.topicid for s in rpc.subscriptions] == ["/ok"]


def test_subscription_churn_past_the_burst_is_refused_until_the_rate_refills():
    r = rules(subscription_burst=4, subscriptions_per_minute=60.0)  # one a second
    assert r.check("p", False, subs((True, "/a"), (False, "/a"), (True, "/a"), (False, "/a")), T0) == []
    rpc = subs((True, "/a"), (False, "/a"))
    assert reasons(r.check("p", False, rpc, T0 + 100)) == {("subscribe", "churn"): (2, True)}
    assert r.check("p", False, subs((True, "/a")), T0 + 1200) == []  # a second later: one more
    assert r.topics_of("p") == {"/a"}


def test_topics_beyond_the_count_per_peer_are_refused_and_a_new_stream_starts_them_afresh():
    r = rules(topics_per_peer=2)
    rpc = subs((True, "/a"), (True, "/b"), (True, "/c"), (True, "/a"))
    assert reasons(r.check("p", False, rpc, T0)) == {("subscribe", "too_many_topics"): (1, True)}
    assert [s.topicid for s in rpc.subscriptions] == ["/a", "/b", "/a"]
    r.stream_ended("p")
    assert r.topics_of("p") == set() and r.check("p", False, subs((True, "/c")), T0) == []


def ihave(topic: str, ids: int) -> rpc_pb2.ControlIHave:
    return rpc_pb2.ControlIHave(topicID=topic, messageIDs=[i.to_bytes(4, "big") for i in range(ids)])


def test_ihave_on_a_topic_not_carried_and_beyond_the_heartbeat_counts_is_refused():
    r = rules(ihave_per_heartbeat=2, ihave_ids_per_heartbeat=300, heartbeat_ms=1000)
    rpc = rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[ihave("/elsewhere", 5), ihave(OURS, 200)]))
    assert reasons(r.check("p", False, rpc, T0)) == {("ihave", "unknown_topic"): (1, True)}
    assert [i.topicID for i in rpc.control.ihave] == [OURS]
    rpc = rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[ihave(OURS, 200)]))  # 400 ids > 300: dropped, not
    assert reasons(r.check("p", False, rpc, T0 + 500)) == {("ihave", "over_heartbeat"): (1, False)}  # held against it
    assert not rpc.HasField("control")  # nothing left: py-libp2p is not even called for it
    assert r.check("p", False, rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[ihave(OURS, 200)])), T0 + 1000) == []
    for _ in range(2):  # the IHAVE count as well
        r.check("p", False, rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[ihave(OURS, 1)])), T0 + 2000)
    rpc = rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[ihave(OURS, 1)]))
    assert reasons(r.check("p", False, rpc, T0 + 2000)) == {("ihave", "over_heartbeat"): (1, False)}
    for _ in range(6):  # past three times the count in one window: a flood, held against the peer
        refusals = r.check("p", False, rpc_pb2.RPC(control=rpc_pb2.ControlMessage(ihave=[ihave(OURS, 1)])), T0 + 2000)
    assert reasons(refusals) == {("ihave", "over_heartbeat"): (1, True)}


def iwant(*ids: bytes) -> rpc_pb2.RPC:
    return rpc_pb2.RPC(control=rpc_pb2.ControlMessage(iwant=[rpc_pb2.ControlIWant(messageIDs=list(ids))]))


def test_iwant_only_for_ids_offered_recently_and_within_the_count():
    r = rules(advertised_ms=5000, iwant_ids_per_frame=3)
    r.advertised("p", [b"m1", b"m2"], T0)
    rpc = iwant(b"m1", b"never")
    assert reasons(r.check("p", False, rpc, T0 + 100)) == {("iwant", "unadvertised"): (1, True)}
    assert list(rpc.control.iwant[0].messageIDs) == [b"m1"]
    assert reasons(r.check("p", False, iwant(b"m2"), T0 + 6000)) == {("iwant", "unadvertised"): (1, True)}  # expired
    assert reasons(r.check("q", False, iwant(b"m1"), T0)) == {("iwant", "unadvertised"): (1, True)}  # offered to p
    assert reasons(r.check("p", False, iwant(b"a", b"b", b"c", b"d"), T0)) == {("iwant", "too_many_ids"): (4, True)}


def test_graft_and_prune_for_topics_not_carried_are_refused_the_others_kept():
    rpc = rpc_pb2.RPC(control=rpc_pb2.ControlMessage(
        graft=[rpc_pb2.ControlGraft(topicID="/elsewhere"), rpc_pb2.ControlGraft(topicID=OURS)],
        prune=[rpc_pb2.ControlPrune(topicID="/elsewhere")]))
    assert reasons(rules().check("p", False, rpc, T0)) == {("graft", "unknown_topic"): (1, True),
                                                           ("prune", "unknown_topic"): (1, True)}
    assert [g.topicID for g in rpc.control.graft] == [OURS] and len(rpc.control.prune) == 0


def test_idontwant_beyond_the_count_is_refused():
    many = rpc_pb2.ControlIDontWant(messageIDs=[bytes([i]) for i in range(5)])
    rpc = rpc_pb2.RPC(control=rpc_pb2.ControlMessage(idontwant=[many]))
    assert reasons(rules(idontwant_ids_per_frame=4).check("p", False, rpc, T0)) == \
        {("idontwant", "too_many_ids"): (5, True)}


def test_frames_over_budget_count_as_invalid_every_few_and_never_for_a_known_peer():
    r = rules(over_budget_per_invalid=3)
    assert [r.over_budget("p", False, T0).invalid for _ in range(6)] == [False, False, True, False, False, True]
    assert not any(r.over_budget("k", True, T0).invalid for _ in range(6))


def test_honest_gossip_passes_untouched():
    r = rules()
    r.advertised("p", [b"m1"], T0)
    rpc = rpc_pb2.RPC(publish=[rpc_pb2.Message(data=b"c", topicIDs=[OURS])],
                      subscriptions=[rpc_pb2.RPC.SubOpts(subscribe=True, topicid=OURS)],
                      control=rpc_pb2.ControlMessage(ihave=[ihave(OURS, 30)], graft=[rpc_pb2.ControlGraft(topicID=OURS)],
                                                     iwant=[rpc_pb2.ControlIWant(messageIDs=[b"m1"])]))
    before = rpc.SerializeToString()
    assert r.check("p", False, rpc, T0) == [] and rpc.SerializeToString() == before


def test_peers_offered_in_a_prune_are_dropped():
    """Peer exchange: py-libp2p would dial every peer a PRUNE names, whoever sent it."""
    prune = rpc_pb2.ControlPrune(topicID=OURS, peers=[rpc_pb2.PeerInfo(peerID=b"x" * 34)], backoff=60)
    rpc = rpc_pb2.RPC(control=rpc_pb2.ControlMessage(prune=[prune]))
    assert rules().check("p", False, rpc, T0) == []
    assert [p.topicID for p in rpc.control.prune] == [OURS] and not rpc.control.prune[0].peers
