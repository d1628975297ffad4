"""`gieok bench locomo`: evidence recall of the product's own ingest → librarian → search path on LoCoMo.

The metric is the one in `../shared/eval/README.md`, exactly:
- one conversation = one user's memory, in a fresh store;
- every turn is ingested through `MemoryService.ingest` as a chat message, `created_at` = its session's
  date-time, the image caption appended as `[image: …]`; the librarian (`Librarian.run_once`) then tags and
  embeds through the real cold path;
- each question goes through `MemoryService.search` (the full ranking of the chosen recipe) with "now" = one
  day after the last session;
- evidence recall@k = share of a question's evidence turns among the top k results, averaged over questions;
  any-hit@k; recall@10 per category; every figure with and without category 5 (adversarial);
- evidence ids are normalised with `D:?(\\d+):0*(\\d+)`, ids that do not exist are dropped, and a question left
  with no valid evidence is skipped.

Speakers: both LoCoMo speakers are people talking to each other, neither is an assistant, so every turn is
ingested with role "user" and the speaker's name as the message title (the author of the message), which is
what a chat importer does with a named participant. The dia_id is kept in `meta` only to score.
Searches do not count (`count_view=False`): each question is asked against the same memory, so one question's
results cannot change the usage signal of the next. `count_views=True` counts them as a live server does
(each search's results are "shown"), to measure what that usage signal does to recall.

`backend="postgres"` builds each conversation's memory in a scratch database on a PostgreSQL server (the one
`pg_url` names, or an embedded one started for the run), so the two backends' retrieval is compared on the
same conversations: they share the ranking but not the keyword index or the vector search.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gieok.providers.embed.base import Embedder

_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
_SESSION = re.compile(r"^session_(\d+)$")
USER_ID = "locomo"


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware UTC datetime (the dataset gives no zone)."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: Iterable[Any], known: set[str]) -> list[str]:
    """Clean evidence ids: every `D<session>:<turn>` found in each entry (one entry may hold several, e.g.
    "D8:6; D9:17"), leading zeros dropped ("D30:05" → "D30:5"), unknown ids dropped, duplicates removed."""
    out: list[str] = []
    for item in raw:
        for s, t in _EVIDENCE.findall(str(item)):
            did = f"D{int(s)}:{int(t)}"
            if did in known and did not in out:
                out.append(did)
    return out


@dataclass(slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    created_at: datetime


@dataclass(slots=True)
class Question:
    question: str
    category: int
    evidence: list[str]


@dataclass(slots=True)
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]
    skipped: int
    now: datetime


def load_conversation(path: Path, *, question_key: str = "question") -> Conversation:
    """`question_key`: the field each question is read from (`question_en` asks a translated conversation's
    original English questions)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conv = data.get("conversation", data)  # the authors' combined file nests it; our split files do not
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))
    turns: list[Turn] = []
    last = None
    for n in sessions:
        date = parse_session_date(conv[f"session_{n}_date_time"])
        last = date if last is None or date > last else last
        for i, t in enumerate(conv[f"session_{n}"]):
            text = str(t.get("text", ""))
            if t.get("blip_caption"):
                text = f"{text} [image: {t['blip_caption']}]"
            # Turns of one session share its date-time; a second apart keeps their order (and their ids
            # time-ordered) without moving them to another day.
            turns.append(Turn(_norm_id(str(t["dia_id"])), str(t["speaker"]), text, n,
                              date + timedelta(seconds=i)))
    if last is None:
        raise ValueError(f"{path}: no sessions")
    known = {t.dia_id for t in turns}
    questions, skipped = [], 0
    for qa in data.get("qa", []):
        ev = normalise_evidence(qa.get("evidence", []), known)
        if not ev:
            skipped += 1
            continue
        if question_key not in qa:
            raise ValueError(f"{path}: a question has no {question_key!r} field (it has {', '.join(sorted(qa))})")
        questions.append(Question(str(qa[question_key]), int(qa["category"]), ev))
    return Conversation(path.stem, turns, questions, skipped, last + timedelta(days=1))


def beside(conv: Conversation, other: Conversation) -> Conversation:
    """`conv` in one memory with `other`'s turns (a user whose memory holds both, e.g. their own Korean chat
    beside their agents' English sessions), asked `conv`'s questions only. The other's turns keep sessions of
    their own and are never evidence; turns are stored in time order, as a memory fills; "now" is a day after
    the later of the two."""
    last = max((t.session for t in conv.turns), default=0)
    theirs = [dataclasses.replace(t, dia_id=f"{other.name}/{t.dia_id}", session=last + t.session)
              for t in other.turns]
    turns = sorted(conv.turns + theirs, key=lambda t: t.created_at)
    return Conversation(f"{conv.name}+{other.name}", turns, conv.questions, conv.skipped, max(conv.now, other.now))


def _norm_id(dia_id: str) -> str:
    m = _EVIDENCE.search(dia_id)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else dia_id


@dataclass(slots=True)
class Tally:
    """Sums for one group of questions; averages are taken at the end."""

    ks: tuple[int, ...]
    n: int = 0
    recall: dict[int, float] = field(default_factory=dict)
    hit: dict[int, float] = field(default_factory=dict)

    def add(self, evidence: list[str], ranked: list[set[str]]) -> None:
        self.n += 1
        ev = set(evidence)
        for k in self.ks:
            got: set[str] = set().union(*ranked[:k]) & ev if ranked[:k] else set()
            self.recall[k] = self.recall.get(k, 0.0) + len(got) / len(ev)
            self.hit[k] = self.hit.get(k, 0.0) + (1.0 if got else 0.0)

    def mean(self, what: dict[int, float], k: int) -> float:
        return what.get(k, 0.0) / self.n if self.n else 0.0


@dataclass(slots=True)
class Score:
    """Every figure, with and without category 5."""

    ks: tuple[int, ...]
    all: Tally = field(init=False)
    no5: Tally = field(init=False)
    cats: dict[int, Tally] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.all, self.no5 = Tally(self.ks), Tally(self.ks)

    def add(self, q: Question, ranked: list[set[str]]) -> None:
        """`ranked`: for each result in rank order, the dia_ids that memory holds."""
        self.all.add(q.evidence, ranked)
        if q.category != 5:
            self.no5.add(q.evidence, ranked)
        self.cats.setdefault(q.category, Tally(self.ks)).add(q.evidence, ranked)


def score_dict(sc: Score, *, questions_skipped: int = 0, wall_s: float = 0.0, recipe: str = "") -> dict[str, Any]:
    def block(t: Tally) -> dict[str, Any]:
        d: dict[str, Any] = {f"recall@{k}": round(t.mean(t.recall, k), 4) for k in sc.ks}
        d.update({f"hit@{k}": round(t.mean(t.hit, k), 4) for k in sc.ks})
        d["questions"] = t.n
        return d
    k10 = 10 if 10 in sc.ks else max(sc.ks)
    out = block(sc.all)
    out["per_category"] = {str(c): {f"recall@{k10}": round(t.mean(t.recall, k10), 4), "questions": t.n}
                           for c, t in sorted(sc.cats.items())}
    out["without_category_5"] = block(sc.no5)
    out["questions_skipped"] = questions_skipped
    out["recipe"] = recipe
    out["wall_s"] = round(wall_s, 1)
    return out


def turns_digest(conv: Conversation) -> str:
    """What a built memory was built from: its turns as ingested (not its questions)."""
    h = hashlib.sha256(conv.name.encode())
    for t in conv.turns:
        h.update(json.dumps([t.dia_id, t.speaker, t.text, t.session, t.created_at.isoformat()]).encode())
    return h.hexdigest()


def _built(workdir: Path, conv: Conversation) -> dict[str, set[str]] | None:
    """The turns each memory of a store kept from an earlier run holds, if that store was built from these
    turns and finished; else None (and the stale files are removed)."""
    db, record = workdir / f"{conv.name}.db", workdir / f"{conv.name}.built.json"
    if record.exists() and db.exists():
        saved = json.loads(record.read_text(encoding="utf-8"))
        if saved.get("turns") == turns_digest(conv):
            return {mid: set(ids) for mid, ids in saved["holds"].items()}
    for p in (record, *workdir.glob(f"{conv.name}.db*")):
        p.unlink(missing_ok=True)
    return None


BACKENDS = ("sqlite", "postgres")
DatabaseFor = Callable[[str], str]      # a conversation's name → the URL of the fresh store its memory goes in


@contextlib.contextmanager
def databases(backend: str = "sqlite", pg_url: str | None = None,
              echo: Callable[[str], Any] | None = None) -> Iterator[DatabaseFor | None]:
    """Where each conversation's memory is built: None for SQLite (a file in the work folder,
    `run_conversation`'s default), or scratch databases on a PostgreSQL server (`pg_url`, or an embedded one
    started here), every one dropped at the end."""
    if backend == "sqlite":
        yield None
        return
    if backend != "postgres":
        raise ValueError(f"{backend!r}: use one of {', '.join(BACKENDS)}")
    from gieok.bench.cluster import drop_database, scratch_database
    from gieok.bench.scale import embedded_postgres
    made: list[str] = []
    with contextlib.ExitStack() as stack:
        server = pg_url or stack.enter_context(embedded_postgres(echo or (lambda _s: None)))

        def fresh(name: str) -> str:
            db = "gieok_locomo_" + re.sub(r"[^a-z0-9_]", "_", name.lower())
            made.append(db)
            return scratch_database(server, db)
        try:
            yield fresh
        finally:
            for db in made:
                with contextlib.suppress(Exception):
                    drop_database(server, db)


async def run_conversation(conv: Conversation, score: Score, *, recipe: str, workdir: Path,
                           wrap_embedder: Callable[[Embedder], Embedder] | None = None,
                           also: Iterable[tuple[Conversation, Score]] = (),
                           count_views: bool = False, reuse: bool = False,
                           database: DatabaseFor | None = None) -> bool:
    """Ingest `conv`, let the librarian finish, ask its questions into `score`; `also`: further question sets
    over the same turns (a variant with the questions in another language), each into its own score.
    `reuse`: a memory built from the same turns in `workdir` by an earlier run is searched as it is (ingest
    and the librarian are skipped), and one built now is kept for the next run (SQLite only). `database`:
    where the memory is built (`databases`; default a SQLite file in `workdir`). Returns whether it was
    reused."""
    from gieok.app.runtime import open_runtime
    from gieok.core.settings import load_settings
    from gieok.memory.ingest import MessageIn

    holds = _built(workdir, conv) if reuse else None
    reused = holds is not None
    url = database(conv.name) if database is not None and not reused else f"sqlite:///{workdir / f'{conv.name}.db'}"
    settings = load_settings(home=workdir, database_url=url, user_id=USER_ID, llm="none")
    async with open_runtime(settings) as rt:
        svc = rt.service
        if wrap_embedder is not None and svc.embedder is not None:
            # The service searches and the librarian embeds with the same (wrapped) embedder.
            svc.embedder = rt.librarian.embedder = wrap_embedder(svc.embedder)
        if holds is None:
            holds = {}
            for t in conv.turns:
                mid, _ = await svc.ingest(MessageIn(content=t.text, user_id=USER_ID, role="user", title=t.speaker,
                                                    session_id=f"{conv.name}-session-{t.session}",
                                                    created_at=t.created_at, meta={"dia_id": t.dia_id}))
                # An identical message is stored once; every turn it stands for counts as retrieved with it.
                holds.setdefault(mid, set()).add(t.dia_id)
            await rt.librarian.run_once()
            if reuse:
                # Written last: a run stopped before this point leaves no record, and its store is rebuilt.
                (workdir / f"{conv.name}.built.json").write_text(json.dumps(
                    {"turns": turns_digest(conv), "holds": {k: sorted(v) for k, v in holds.items()}}),
                    encoding="utf-8")
        f = svc.filters(USER_ID)
        for c, sc in ((conv, score), *also):
            kmax = max(sc.ks)
            for q in c.questions:
                out = await svc.search(f, q.question, limit=kmax, recipe=recipe, now=c.now, count_view=count_views)
                sc.add(q, [holds.get(h.memory.id, set()) for h in out.hits])
    return reused


@contextlib.contextmanager
def workdir_for(stores: Path | None, prefix: str) -> Iterator[Path]:
    """Where the memories are built: `stores` (kept for the next run) or a temporary folder."""
    if stores is not None:
        stores.mkdir(parents=True, exist_ok=True)
        yield stores
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


async def run_locomo(data: Path, *, ks: tuple[int, ...] = (5, 10, 20), recipe: str = "hybrid",
                     wrap_embedder: Callable[[Embedder], Embedder] | None = None,
                     echo: Callable[[str], Any] | None = None, count_views: bool = False,
                     stores: Path | None = None, backend: str = "sqlite",
                     pg_url: str | None = None, beside_path: Path | None = None) -> dict[str, Any]:
    """`stores`: a folder keeping each conversation's built memory for the next run (`run_conversation`'s
    `reuse`, SQLite only), so that a ranking change is measured without ingesting and embedding again.
    `backend`, `pg_url`: where the memories are built (`databases`). `beside_path`: a conversation stored in
    every memory beside the one asked (`beside`)."""
    files = sorted(data.glob("*.json")) if data.is_dir() else [data]
    if not files:
        raise FileNotFoundError(f"no *.json conversation files in {data}")
    t0 = time.perf_counter()
    score = Score(tuple(sorted(set(ks))))
    skipped = 0
    with workdir_for(stores, "gieok-locomo-") as workdir, databases(backend, pg_url, echo) as database:
        other = load_conversation(beside_path) if beside_path is not None else None
        for path in files:
            conv = load_conversation(path)
            if other is not None:
                conv = beside(conv, other)
            skipped += conv.skipped
            t1 = time.perf_counter()
            reused = await run_conversation(conv, score, recipe=recipe, workdir=workdir,
                                            wrap_embedder=wrap_embedder, count_views=count_views,
                                            reuse=stores is not None, database=database)
            if echo:
                echo(f"{path.name}: {len(conv.turns)} turns, {len(conv.questions)} questions"
                     f"{', memory reused' if reused else ''} ({time.perf_counter() - t1:.0f} s)")
    return score_dict(score, questions_skipped=skipped, wall_s=time.perf_counter() - t0, recipe=recipe)


def format_report(res: dict[str, Any], ks: Iterable[int]) -> list[str]:
    ks = sorted(set(ks))
    no5 = res["without_category_5"]
    k10 = 10 if 10 in ks else max(ks)
    lines = [f"recipe {res['recipe']}: {res['questions']} questions scored ({no5['questions']} without "
             f"category 5), {res['questions_skipped']} skipped (no valid evidence), wall {res['wall_s']} s"]
    for label, b in (("all", res), ("no cat 5", no5)):
        lines.append(f"{label:>8}: " + "  ".join(f"recall@{k} {b[f'recall@{k}']:.3f}" for k in ks) + "  |  "
                     + "  ".join(f"hit@{k} {b[f'hit@{k}']:.3f}" for k in ks))
    lines.append(f"recall@{k10} per category: " + "  ".join(
        f"{c}: {v[f'recall@{k10}']:.3f} (n={v['questions']})" for c, v in res["per_category"].items()))
    return lines
