"""`gieok bench notes`: the question sets parse, the tally counts what it says, and a tiny set runs end to end on
the local model through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gieok.bench.notes import BUNDLED, Tally, bundled_path, load_set

TINY = "\n".join([
    "# a comment",
    "n\tn1\tWe deploy on Tuesdays\t-",
    "n\tn2\t김치찌개 레시피: 돼지고기, 묵은지, 두부\t-",
    "n\tn3\tThe staging server is staging.internal, port 8443\t-",
    "q\tq1\twhen do we deploy?\tn1",
    "q\tq2\t김치찌개 어떻게 만들어?\tn2",
    "q\tq3\t고양이 사료\t-",
    "q\tq4\twho won the football game?\t-",
]) + "\n"


@pytest.mark.parametrize("name", BUNDLED)
def test_the_bundled_sets_parse_and_hold_both_kinds_of_question_in_both_languages(name: str) -> None:
    s = load_set(bundled_path(name))
    assert len(s.notes) >= 20 and len(s.queries) >= 60
    answerable = [q for q in s.queries if q[2]]
    assert len(answerable) >= 40 and len(s.queries) - len(answerable) >= 25
    assert any("\uac00" <= ch <= "\ud7a3" for _i, text, _a in s.queries for ch in text)
    assert any(text.isascii() for _i, text, _a in s.queries)


def test_a_bad_set_names_its_line_and_what_is_wrong(tmp_path: Path) -> None:
    p = tmp_path / "bad.tsv"
    p.write_text("n\tn1\tWe deploy on Tuesdays\t-\nq\tq1 when do we deploy?\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:2: expected 4 tab-separated columns"):
        load_set(p)
    p.write_text("n\tn1\tWe deploy on Tuesdays\t-\nq\tq1\twhen do we deploy?\tn9\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not in the set: n9"):
        load_set(p)


def test_the_tally_counts_what_it_names() -> None:
    t = Tally()
    t.add(["n1"], ["n1", "n3"])      # answer first, one unrelated beside it
    t.add(["n2"], ["n3", "n2"])      # answer shown, not first
    t.add(["n4"], [])                # nothing shown
    t.add([], [])                    # quiet, rightly
    t.add([], ["n1", "n2"])          # two notes shown for nothing
    assert (t.answerable, t.first, t.shown, t.nothing, t.beside) == (3, 1, 2, 1, 2)
    assert (t.unanswerable, t.quiet, t.noise) == (2, 1, 2)
    assert (t.undersold, t.oversold) == (0, 1)
    t.add(["n1"], ["n1"], mode="fallback")     # the answer, under "no close match"
    t.add(["n2"], ["n3"], mode="fallback")     # no answer shown: nothing undersold
    t.add([], ["n1"], mode="fallback")         # shown as keyword matches only: not oversold
    t.add([], ["n1"], mode="recent")           # the newest notes, for a query of question words only: neither
    t.add([], [], mode="fallback")
    assert (t.undersold, t.oversold) == (1, 1)
    t.add([], ["n2"], mode="vector")
    assert t.oversold == 2


def test_bench_notes_end_to_end(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gieok.cli import app

    p = tmp_path / "tiny.tsv"
    p.write_text(TINY, encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["bench", "notes", "--data", str(p), "--json"])
    assert res.exit_code == 0, res.output
    (s,) = json.loads(res.output)["sets"]
    assert s["notes"] == 3 and s["all"]["answerable"] == 2 and s["all"]["unanswerable"] == 2
    assert s["all"]["first"] == 2 and s["all"]["quiet"] == 2, s["misses"]
    assert set(s["by_script"]) == {"hangul", "latin"}
    text = runner.invoke(app, ["bench", "notes", "--data", str(p)]).output
    assert "answer first   2" in text and "unanswerable   2: nothing shown   2" in text
    assert 'answers shown under "no close match"  0' in text and "shown notes as close in meaning  0" in text
    bad = tmp_path / "bad.tsv"
    bad.write_text("q\tq1\tx\n", encoding="utf-8")
    res = runner.invoke(app, ["bench", "notes", "--data", str(bad)])
    assert res.exit_code == 2 and "bad.tsv:1" in res.output
