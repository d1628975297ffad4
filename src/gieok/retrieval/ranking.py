"""Scoring candidates (ARCHITECTURE §6): relevance, recency, importance, usage, minus duplication.

Every weight lives in a `Recipe` (gieok.retrieval.recipes); what a model's cosines mean, in
gieok.retrieval.model_cosines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from gieok.core.models import Hit, Memory
from gieok.retrieval.asking import question_share
from gieok.retrieval.exchange import exchange_times, reply_lifts
from gieok.retrieval.explain_words import asks_why_or_how
from gieok.retrieval.order_words import Order, order_positions
from gieok.retrieval.recipes import Recipe
from gieok.retrieval.scripts import LATIN, text_script, written_in_english
from gieok.retrieval.title_match import names_title
from gieok.store.base import Vector

TYPE_BOOST = {"semantic": 0.10, "working": -0.05}


@dataclass(slots=True)
class Candidate:
    memory: Memory
    cos: float | None = None
    bm25: float | None = None
    vector: Vector | None = None
    substring: bool = False
    date_match: float = 0.0        # query_dates.date_match: 1 a named day, less a longer window
    date_said: bool = False        # date_match is for a time the row names, not when it was written
    neighbour_cos: float | None = None    # the best cosine of its session neighbours (r_neighbour)
    alone: bool = False            # its neighbours were looked up and it has none: its own context (r_neighbour)
    states_time: bool = False      # the query asks when and the row says when (time_words; r_when)
    feedback: float = 0.0          # BM25 of the words the best candidates share (retrieval.feedback; r_feedback)
    # The cosine it must reach to be shown when nothing else ties it to the query (`rank`); 0: not judged.
    cos_only_floor: float = 0.0
    # How far `cos` and `neighbour_cos` move with the language set aside (retrieval.language_direction): they
    # order rows only, as a stand-in does (`rank`).
    language_shift: float = 0.0
    neighbour_shift: float = 0.0
    # Its session neighbours' ids (just before and after it) that were looked up: an agent's reply and the user's
    # message beside it (gieok.retrieval.exchange).
    neighbour_ids: tuple[str, ...] = ()


def _cos_part(cos: float, recipe: Recipe) -> float:
    """A cosine rescaled above the recipe's floor (`Recipe.cos_floor`)."""
    floor = recipe.cos_floor or 0.0
    return max(0.0, (cos - floor) / (1.0 - floor))


def _bm_part(bm: float, recipe: Recipe, best: float = 0.0) -> float:
    """BM25 on 0..1: saturated (bm / (bm + k)) and, when `best` (the query's best BM25 among the candidates) is
    given, partly as a share of it (`Recipe.bm25_share_of_best`)."""
    if bm <= 0:
        return 0.0
    saturated = bm / (bm + recipe.bm25_k)
    if best <= 0 or recipe.bm25_share_of_best <= 0:
        return saturated
    share = recipe.bm25_share_of_best
    return (1 - share) * saturated + share * min(1.0, bm / max(best, recipe.bm25_k))


def keyword_evidence(c: Candidate, recipe: Recipe) -> float:
    """A candidate's BM25: the query's own words' (and their translations') plus its feedback terms' share."""
    return (c.bm25 or 0.0) + recipe.r_feedback * c.feedback


def own_relevance(c: Candidate, recipe: Recipe) -> float:
    """A candidate's relevance from its own cosine, BM25 and date alone, as `rank` weighs them (the "when"
    bonus at full weight: its share of the best row's relevance is not known yet): the order in which
    candidates get their neighbours looked up (`Recipe.neighbour_candidates`)."""
    return (recipe.r_cos * _cos_part(c.cos or 0.0, recipe)
            + recipe.r_bm25 * _bm_part(keyword_evidence(c, recipe), recipe)
            + recipe.r_date * c.date_match + recipe.r_when * c.states_time)


def recency(m: Memory, now: datetime, recipe: Recipe) -> float:
    created = m.created_at or now
    age_days = max(0.0, (now - created).total_seconds() / 86400.0)
    return math.exp(-math.log(2) * age_days / recipe.half_life.get(m.kind, 30.0))


def importance(m: Memory) -> float:
    return min(1.0, max(0.0, m.importance + (0.20 if m.is_pinned else 0.0) + TYPE_BOOST.get(m.kind, 0.0)))


# A memory shown in results has not been used: agents skim past most of what a search returns. Counting each
# appearance as a view made whatever was shown often (a pinned memory above all) look the most used, and so
# shown more: usage fed itself. An appearance weighs a twentieth of an explicit open.
W_SHOWN = 0.05


def raw_usage(m: Memory) -> float:
    """§6's usage from explicit opens, cites (and helpful feedback) and edits, plus a little for appearances."""
    return (math.log1p(m.view_count) + 2 * math.log1p(m.cite_count) + 0.5 * math.log1p(m.edit_count)
            + W_SHOWN * math.log1p(m.shown_count))


def usage_level(m: Memory) -> float:
    """Usage on a fixed 0..1 scale, u/(1+u): batch min-max (§6 as written) gave whichever candidate was used
    most a full 1.0, however little that was; one explicit open is 0.41, one cite 0.58, a thousand
    appearances 0.26."""
    u = raw_usage(m)
    return u / (1.0 + u)


def tag_jaccard(query_tokens: set[str], m: Memory) -> float:
    tags = {t.lower() for t in (*m.p_tags, *m.d_tags)}
    if not tags or not query_tokens:
        return 0.0
    return len(query_tokens & tags) / len(query_tokens | tags)


@dataclass(slots=True)
class _Parts:
    """A candidate's score parts; a hit's parts and reasons are written out only for the rows picked (a search
    ranks ~200 candidates to return 10)."""
    rel: float
    cos: float
    nb: float
    bm: float
    jac: float
    title: float
    date: float
    when: float
    order: float
    rec: float
    imp: float
    use: float
    gate: float
    reply: float = 0.0      # relevance taken from the user's message its assistant's reply is beside (exchange)

    def as_dict(self, c: Candidate, duplication: float) -> dict[str, float]:
        return {"relevance": self.rel, "cosine": self.cos, "neighbour_cosine": self.nb, "bm25": self.bm,
                "feedback": c.feedback, "tag_jaccard": self.jac, "title": self.title, "date": self.date,
                "when": self.when, "order": self.order, "recency": self.rec, "importance": self.imp, "usage": self.use,
                "prior_gate": self.gate, "reply": self.reply, "duplication": duplication}

    def reasons(self, c: Candidate, recipe: Recipe, order: Order | None) -> list[str]:
        reasons = []
        if c.cos is not None and recipe.r_cos > 0:
            # Not in a keyword fallback (r_cos 0): its cosine did not count, and the search found nothing close.
            reasons.append(f"semantic match (cosine {self.cos:.2f})")
        if self.nb > 0 and recipe.r_cos > 0 and recipe.r_neighbour > 0 and self.nb > self.cos:
            reasons.append(f"next to a semantic match (cosine {self.nb:.2f})")
        if c.bm25:
            reasons.append("keyword match")
        elif self.bm > 0:
            reasons.append("shares words with the closest matches")
        if c.substring:
            reasons.append("substring match")
        if self.jac > 0:
            reasons.append("tag match")
        if self.title:
            reasons.append("title match")
        if self.date:
            reasons.append("speaks of the date the query names" if c.date_said
                           else "created on the date the query names")
        if self.when and recipe.r_when > 0:
            reasons.append("says when (the query asks when)")
        if self.order and recipe.r_order > 0:
            reasons.append("the latest of the rows about it" if order == "last"
                           else "the earliest of the rows about it")
        if self.reply:
            reasons.append("the agent's answer in a matching exchange")
        if replaced_by(c.memory):
            reasons.append("outdated: a newer memory replaces it")
        elif c.memory.meta.get("contradicted_by"):
            # Which one holds is not clear (contradictions' weaker rule): said, not ranked.
            reasons.append("a newer memory contradicts it")
        if c.memory.is_pinned:
            reasons.append("pinned")
        if self.rec > 0.8:
            reasons.append("recent")
        return reasons


def replaced_by(m: Memory) -> str:
    """The newer memory the librarian found replacing `m` (gieok.librarian.contradictions), or ""."""
    got = m.meta.get("superseded_by")
    return got if isinstance(got, str) else ""


def _cosine_only(c: Candidate, p: _Parts) -> bool:
    """Whether nothing but its cosines ties this candidate to the query: no word, tag, title, date or substring."""
    return not p.bm and not p.jac and not p.title and not p.date and not c.substring


def _cosine_only_below_floor(c: Candidate, p: _Parts) -> bool:
    """Whether nothing but a cosine under its floor (`Candidate.cos_only_floor`) ties this candidate to the
    query: no word, tag, title, date or substring, and no neighbour that reaches the floor."""
    return (c.cos_only_floor > 0 and p.cos < c.cos_only_floor and p.nb < c.cos_only_floor and _cosine_only(c, p))


_Rel = tuple[float, float, float, float, float, float, float]     # relevance, cos, bm, jac, title, date, nb


def rank(cands: list[Candidate], *, query_tokens: set[str], query_text: str, now: datetime, recipe: Recipe,
         limit: int, order: Order | None = None) -> list[Hit]:
    """Score, then pick greedily with the duplication penalty (MMR): each pick is penalised by its highest
    cosine to what is already picked. `order`: the query asks for the first or the last time (order_words)."""
    if not cands:
        return []
    usages = [usage_level(c.memory) for c in cands]
    q_lower = query_text.lower().strip()
    # A row with no vector of this model yet (the librarian has not embedded it, or it holds another model's
    # vector until the re-embed) has no cosine to add: scored 0 for it, a row containing every query word
    # ranked below unrelated embedded rows. Its keyword evidence stands in for the missing semantic part.
    semantic = recipe.r_cos > 0 and any(c.cos is not None for c in cands)
    rels: list[_Rel] = []
    # The part of each row's relevance that only orders: its stand-in for a neighbour (`alone`) and the shift of
    # its cosines with the language set aside.
    ordering_only: list[float] = []
    # English words matched as words: the English rows of a query in Latin letters (bm25_share_of_best).
    words = recipe.bm25_share_of_best > 0 and text_script(query_text) == LATIN
    same = [words and written_in_english(c.memory) for c in cands]
    best_bm = max((keyword_evidence(c, recipe) for c, sm in zip(cands, same, strict=True) if sm), default=0.0)
    for c, sm in zip(cands, same, strict=True):
        m = c.memory
        cos = c.cos if c.cos is not None else 0.0
        bm = keyword_evidence(c, recipe)
        bm_part = _bm_part(bm, recipe, best_bm if sm else 0.0)
        nb = c.neighbour_cos if c.neighbour_cos is not None else 0.0
        if semantic and c.cos is None:
            cos_part = aside_part = bm_part
        else:
            cos_part = _cos_part(cos, recipe)
            aside_part = _cos_part(cos + c.language_shift, recipe)
        if nb > 0:
            cos_part += recipe.r_neighbour * _cos_part(nb, recipe)
            aside_part += recipe.r_neighbour * _cos_part(nb + c.neighbour_shift, recipe)
        elif c.alone and c.cos is not None:
            # A row with nothing beside it (a saved note, a message alone in its session) stands for its own
            # neighbour. Left at 0, a pinned "결제 서비스 배포 규칙" note came fifth for "배포 일정", under chat
            # turns that mention deploying in passing but sit beside turns about it. It only orders: which
            # rows are shown at all is judged on the pool's scores without any stand-in (`ordering_only`
            # taken off), as before, since the keep threshold was set with notes scored on their own.
            nb = cos
            aside_part *= 1 + recipe.r_neighbour
        # As the stand-in, the language set aside only orders: the keep threshold and a cosine-only row's floor
        # were measured on the model's own cosines (an unrelated Korean note raised past them for an English
        # query was shown: "When is the team meeting?" listed "할머니가 지난주에…").
        orders = recipe.r_cos * (aside_part - cos_part)
        jac = tag_jaccard(query_tokens, m)
        title = 1.0 if m.title and names_title(q_lower, m.title.lower().strip()) else 0.0
        date = c.date_match
        rel = (recipe.r_cos * aside_part + recipe.r_bm25 * bm_part + recipe.r_tags * jac + recipe.r_title * title
               + recipe.r_date * date)
        if recipe.r_question > 0:
            rel -= recipe.r_question * question_share(m.content)
        if order != "first" and replaced_by(m):
            # What was true before: below what replaced it, unless the question asks for the first time.
            rel *= recipe.superseded_share
            orders *= recipe.superseded_share
        rels.append((rel, cos, bm, jac, title, date, nb))
        ordering_only.append(orders)
    priors = [(recency(c.memory, now, recipe), importance(c.memory), u) for c, u in zip(cands, usages, strict=True)]
    # A why or how question: an agent's reply beside a matching user message speaks for their exchange.
    share = recipe.exchange_share if asks_why_or_how(query_text) else 0.0
    # Each row's time for the order bonus, read once for both scorings below.
    times = (exchange_times([c.memory for c in cands], [c.neighbour_ids for c in cands])
             if order is not None and recipe.r_order > 0 else [])
    s_order, parts = _scores(cands, priors, rels, recipe, order, share, times)
    # The same scores without the stand-ins decide which rows are shown (every row's: another row's stand-in
    # raises the best relevance that each row's priors are scaled by).
    s_own = _scores(cands, priors, [(r[0] - a, *r[1:]) for r, a in zip(rels, ordering_only, strict=True)],
                    recipe, order, share, times)[0] if any(ordering_only) else s_order
    scored = sorted(zip(s_order, cands, parts, s_own, strict=True), key=lambda t: -t[0])

    # Greedy MMR with the running max cosine to the picks kept per candidate: one matrix-vector product per
    # pick instead of re-stacking every picked vector for every candidate.
    scores = np.array([t[0] for t in scored])
    own_scores = np.array([t[3] for t in scored])
    dims = {c.vector.shape[0] for _s, c, _p, _o in scored if c.vector is not None}
    has_vec = np.array([c.vector is not None for _s, c, _p, _o in scored])
    mat = None
    if len(dims) == 1:
        d = dims.pop()
        mat = np.zeros((len(scored), d), np.float32)
        for i, (_s, c, _p, _o) in enumerate(scored):
            if c.vector is not None:
                mat[i] = c.vector
    max_dup = np.zeros(len(scored))
    left = np.ones(len(scored), bool)
    unmatched = np.array([_cosine_only_below_floor(c, p) for _s, c, p, _o in scored])
    if not unmatched.all():
        left &= ~unmatched
    elif len(scored):
        # Every row is tied by a cosine under its floor, though the verdict found one close enough (a row's own
        # reach can put its floor above the verdict's threshold): the closest row stands for the match, and the
        # rest are not shown beside it.
        tied = np.array([p.cos for _s, _c, p, _o in scored])
        left &= tied >= tied.max()
    picked: list[Hit] = []
    by_words: dict[tuple[str, str, str, str, str], Hit] = {}
    taken = np.zeros(len(scored), bool)
    while left.any() and len(picked) < limit:
        # The best by the ordering score among the rows whose own score passes the keep threshold (the same
        # rows, with no stand-in in the pool, as the ordering score alone would pass).
        passes = left & (own_scores - recipe.w_duplication * max_dup >= recipe.keep_threshold)
        if not passes.any():
            # Nothing left passes the keep threshold: return less rather than noise.
            break
        adj = np.where(passes, scores - recipe.w_duplication * max_dup, -np.inf)
        i = int(np.argmax(adj))
        best_s = float(adj[i])
        left[i] = False
        taken[i] = True
        _s, c, p, _o = scored[i]
        if picked and best_s < recipe.cos_only_share * picked[0].score and _cosine_only(c, p):
            # Resembling the query in meaning only, far below what the first result matched by (Recipe).
            continue
        key = same_words_key(c.memory)
        if (first := by_words.get(key)) is not None:
            # The same words again (a rule restated every session, a stock reply): embedded beside different
            # messages, a copy's vector can sit far enough from the first's that the duplication penalty lets
            # four copies fill a list of six. One result says it, and how often it was said.
            first.repeats.append(c.memory)
            continue
        hit = Hit(c.memory, best_s, p.as_dict(c, float(max_dup[i])), p.reasons(c, recipe, order))
        picked.append(hit)
        by_words[key] = hit
        if mat is not None and has_vec[i]:
            max_dup = np.maximum(max_dup, np.where(has_vec, np.clip(mat @ mat[i], 0.0, None), 0.0))
    # Copies the picking did not reach (past the limit or under the threshold) still say how often it was said:
    # those written exactly alike (a key for each of ~200 candidates cost a third of the ranking's time).
    written = {m.content for h in picked for m in h.memories()}
    for (_s, c, _p, _o), done in zip(scored, taken, strict=True):
        if (not done and c.memory.content in written
                and (first := by_words.get(same_words_key(c.memory))) is not None):
            first.repeats.append(c.memory)
    for hit in picked:
        hit.repeats.sort(key=lambda m: (m.created_at is None, m.created_at or now))
    return picked


def _scores(cands: list[Candidate], priors: list[tuple[float, float, float]], rels: list[_Rel],
            recipe: Recipe, order: Order | None, exchange_share: float,
            times: list[datetime | None]) -> tuple[list[float], list[_Parts]]:
    """Each candidate's score and parts from its relevance parts (`rels`) and its recency, importance and usage
    (`priors`): the "when" and order bonuses and the priors are scaled by the best relevance in the pool. `times`:
    each row's time for the order bonus (exchange_times; empty when the query asks for no order)."""
    # Saying when tells apart rows about the question's event; it must not make a row about something else
    # relevant (a pinned "매주 월요일에 가격을 저장한다" shown for "when do we deploy?"): the bonus is in proportion
    # to the row's relevance without it, next to the best row's.
    best_base = max(r[0] for r in rels)
    whens = [r[0] / best_base if c.states_time and best_base > 0 else 0.0 for c, r in zip(cands, rels, strict=True)]
    # The same for the first or last of the rows about the question's subject (order_words).
    orders = (order_positions(times, [r[0] for r in rels], order, recipe.order_group)
              if order is not None and recipe.r_order > 0 else [0.0] * len(cands))
    finals = [r[0] + recipe.r_when * w + recipe.r_order * o for r, w, o in zip(rels, whens, orders, strict=True)]
    lifts = reply_lifts([c.memory for c in cands], [c.neighbour_ids for c in cands], [r[0] for r in rels], finals,
                        exchange_share)
    best_rel = max(f + lift for f, lift in zip(finals, lifts, strict=True))
    scores: list[float] = []
    parts: list[_Parts] = []
    for (rec, imp, u), (_base, cos, bm, jac, title, date, nb), when, o, final, lift in zip(
            priors, rels, whens, orders, finals, lifts, strict=True):
        rel = final + lift
        # Recency, importance and usage count in proportion to how relevant a row is next to the best one:
        # added flat (§6 as written), a pinned or often-shown memory outranked the one the query was about
        # (a pinned coffee preference above "we deploy billing on Tuesdays" for "when do we deploy billing?").
        gate = rel / best_rel if best_rel > 0 else 1.0
        scores.append(recipe.w_relevance * rel + gate * (recipe.w_recency * rec + recipe.w_importance * imp
                                                         + recipe.w_usage * u))
        parts.append(_Parts(rel, cos, nb, bm, jac, title, date, when, o, rec, imp, u, gate, lift))
    return scores, parts


def same_words_key(m: Memory) -> tuple[str, str, str, str, str]:
    """What makes two rows one result: the same owner, scope, team and role, and the same words (spacing and
    case aside). A copy another user wrote, one shared with other people, or the assistant's "네" after the
    user's, stays a result of its own."""
    return m.user_id, m.privacy_scope, m.team or "", m.role, " ".join(m.content.split()).casefold()
