"""The store contract, team server part (runs on every backend, like tests/test_store_contract.py): privacy
scopes applied inside every read query — both candidate lists of search (keyword and vector) and the
substring fallback, listing, get-by-id, links — sharing a memory later, and the auth tables: teams, members,
API keys, the audit log and erasing a person."""

from __future__ import annotations

from datetime import timedelta

from gieok.core.dates import utcnow
from gieok.core.models import SearchFilters
from gieok.core.principal import Principal
from gieok.core.text import query_terms
from gieok.store import Store
from gieok.store.auth_base import ApiKeyRecord, AuditEntry
from gieok.store.base import ColdResult
from tests.test_store_contract import put, unit

ALICE = Principal("alice", teams=("eng",))
BOB = Principal("bob", teams=("eng",))
CAROL = Principal("carol", teams=("ops",))
MODEL = "test-model"


async def _world(store: Store) -> dict[str, str]:
    ids: dict[str, str] = {}
    for i, (user, scope, team) in enumerate([("alice", "private", ""), ("alice", "team", "eng"),
                                            ("alice", "public", ""), ("bob", "private", ""),
                                            ("bob", "team", "eng"), ("carol", "team", "ops"),
                                            ("carol", "private", "")]):
        key = f"{user}-{scope}"
        ids[key] = await put(store, f"quokka 쿼카 note {key.replace('-', '')}", user=user, privacy_scope=scope,
                             team=team, session_id=f"s{i}")
        await store.complete_cold([ColdResult(ids[key], embedding=unit(7), embedding_model=MODEL)], utcnow())
    return ids


def _sees(p: Principal) -> set[str]:
    rows = {"alice-private": "alice", "alice-team": "eng", "alice-public": "*", "bob-private": "bob",
            "bob-team": "eng", "carol-team": "ops", "carol-private": "carol"}
    return {k for k, v in rows.items() if v in ("*", p.user_id) or v in p.teams}


async def test_every_candidate_list_applies_the_scope(store: Store) -> None:
    ids = await _world(store)
    back = {v: k for k, v in ids.items()}
    for p in (ALICE, BOB, CAROL):
        want = {ids[k] for k in _sees(p)}
        f = SearchFilters(user_id=p.user_id, viewer=p)
        kw = {m.id for m, _ in await store.keyword_search(f, query_terms("quokka"), 50)}
        ko = {m.id for m, _ in await store.keyword_search(f, query_terms("쿼카"), 50)}
        sub = {m.id for m in await store.substring_search(f, "quokka", 50)}
        vec = {m.id for m, _ in await store.vector_search(f, MODEL, unit(7), 50)}
        listed = {m.id for m in await store.list_memories(f, limit=50)}
        for name, got in (("keyword", kw), ("korean", ko), ("substring", sub), ("vector", vec), ("list", listed)):
            assert got == want, (p.user_id, name, sorted(back[i] for i in got ^ want))
        for key, mid in ids.items():
            assert (await store.get_memory(mid, viewer=p) is not None) == (key in _sees(p)), (p.user_id, key)
        assert {m.id for m in await store.get_memories(list(ids.values()), viewer=p)} == want
    # No viewer: only the user's own rows (what the librarian works on).
    own = {m.id for m, _ in await store.vector_search(SearchFilters(user_id="alice"), MODEL, unit(7), 50)}
    assert own == {ids["alice-private"], ids["alice-team"], ids["alice-public"]}


async def test_neighbour_vectors_apply_the_scope(store: Store) -> None:
    # Alice's shared messages around a private one: a teammate's search must not score them by it.
    t0 = utcnow()
    shared1, private, shared2 = [await put(store, t, privacy_scope=scope, team=team, session_id="chat",
                                           at=t0 + timedelta(seconds=i))
                                 for i, (t, scope, team) in enumerate([("shared hello", "team", "eng"),
                                                                       ("private detail", "private", ""),
                                                                       ("shared bye", "team", "eng")])]
    await store.complete_cold([ColdResult(mid, embedding=unit(i), embedding_model=MODEL)
                               for i, mid in enumerate((shared1, private, shared2))], utcnow())
    ids = [shared1, private, shared2]
    mine = await store.neighbour_vectors(SearchFilters(user_id="alice", viewer=ALICE), ids, MODEL)
    assert {k: len(v) for k, v in mine.items()} == {shared1: 1, private: 2, shared2: 1}
    # Bob sees the two shared messages but not what lies between them; a row he cannot see lends him nothing.
    assert await store.neighbour_vectors(SearchFilters(user_id="bob", viewer=BOB), ids, MODEL) == {}
    assert await store.neighbour_vectors(SearchFilters(user_id="carol", viewer=CAROL), ids, MODEL) == {}


async def test_a_row_in_two_partitions_is_one_candidate(store: Store) -> None:
    # Alice's team and public rows are hers and her team's (or everyone's): the vector search of her as a
    # viewer meets each twice and must still return the true top rows, each once.
    q = unit(7)
    ids: dict[str, float] = {}
    for i in range(30):
        v = unit(100 + i)
        mid = await put(store, f"shared note {i}", user="alice", privacy_scope="team" if i % 3 else "public",
                        team="eng" if i % 3 else "", session_id=f"s{i}")
        await store.complete_cold([ColdResult(mid, embedding=v, embedding_model=MODEL)], utcnow())
        ids[mid] = float(v @ q)
    best = sorted(ids, key=lambda k: -ids[k])
    for limit in (1, 5, 10):
        got = [m.id for m, _ in await store.vector_search(SearchFilters(user_id="alice", viewer=ALICE), MODEL,
                                                          q, limit)]
        assert got == best[:limit], limit


async def test_sharing_later_reaches_every_list_and_unsharing_leaves_them(store: Store) -> None:
    ids = await _world(store)
    f = SearchFilters(user_id="carol", viewer=CAROL)
    assert ids["bob-private"] not in {m.id for m, _ in await store.vector_search(f, MODEL, unit(7), 50)}
    await store.update_memory(ids["bob-private"], {"privacy_scope": "public", "team": ""})
    assert ids["bob-private"] in {m.id for m, _ in await store.vector_search(f, MODEL, unit(7), 50)}
    assert ids["bob-private"] in {m.id for m, _ in await store.keyword_search(f, query_terms("quokka"), 50)}
    await store.update_memory(ids["bob-private"], {"privacy_scope": "private"})
    for got in ({m.id for m, _ in await store.vector_search(f, MODEL, unit(7), 50)},
                {m.id for m, _ in await store.keyword_search(f, query_terms("quokka"), 50)}):
        assert ids["bob-private"] not in got


async def test_links_show_only_visible_ends(store: Store) -> None:
    ids = await _world(store)
    await store.add_link(ids["alice-team"], ids["alice-private"], "cause_of")
    assert len(await store.list_links(ids["alice-team"], viewer=ALICE)) == 1
    assert await store.list_links(ids["alice-team"], viewer=BOB) == []   # bob may not see the private end
    assert len(await store.list_links(ids["alice-team"])) == 1


async def test_teams_keys_audit_and_erasure(store: Store) -> None:
    ids = await _world(store)
    await store.add_member("eng", "alice")
    await store.add_member("eng", "bob", source="key")
    await store.add_member("ops", "alice")
    assert await store.teams_of("alice") == ("eng", "ops")
    assert {t.name: t.members for t in await store.list_teams()} == {"eng": ["alice", "bob"], "ops": ["alice"]}
    assert await store.remove_member("ops", "alice") and not await store.remove_member("ops", "alice")
    now = utcnow()
    await store.insert_api_key(ApiKeyRecord("0123456789ab", "h" * 64, "bob", "viewer", "ci", ["eng"], now,
                                            now + timedelta(days=1)))
    got = await store.get_api_key("0123456789ab")
    assert got is not None and (got.user_id, got.role, got.teams, got.revoked_at) == ("bob", "viewer", ["eng"], None)
    # What authentication reads on every request, in one round trip: the key and its user's current teams.
    assert await store.key_with_teams("0123456789ab") == (got, ("eng",))
    assert await store.key_with_teams("ba9876543210") is None
    assert await store.revoke_api_key("0123456789ab", now) and not await store.revoke_api_key("0123456789ab", now)
    await store.touch_api_keys({"0123456789ab": now})
    assert (await store.list_api_keys("bob"))[0].last_used_at is not None
    await store.append_audit([AuditEntry(now, "alice", "search_memory", memory_ids=[ids["bob-team"]],
                                         owners=["bob"], detail="read shared"),
                              AuditEntry(now, "root", "erase", on_behalf="bob"),
                              AuditEntry(now, "carol", "search_memory")])
    assert [e.actor for e in await store.list_audit(user_id="bob")] == ["alice", "root"]
    assert len(await store.list_audit(since=now - timedelta(seconds=1))) == 3
    first = (await store.list_audit(limit=1))[0]
    assert [e.actor for e in await store.list_audit(after_id=first.id)] == ["root", "carol"]
    await store.add_link(ids["alice-team"], ids["bob-team"], "cause_of")
    rep = await store.erase_user("bob", "erased:x")
    assert (rep.memories, rep.memberships, rep.api_keys) == (2, 1, 1)
    for key in ("bob-private", "bob-team"):
        assert await store.get_memory(ids[key], include_deleted=True) is None
    assert await store.list_links(ids["alice-team"]) == []
    f = SearchFilters(user_id="alice", viewer=ALICE)
    assert all(m.user_id != "bob" for m, _ in await store.vector_search(f, MODEL, unit(7), 50))
    assert all(m.user_id != "bob" for m, _ in await store.keyword_search(f, query_terms("quokka"), 50))
    assert await store.list_audit(user_id="bob") == []
    assert (await store.list_audit(user_id="erased:x"))[0].owners == ["erased:x"]
    assert "bob" not in await store.list_user_ids()
