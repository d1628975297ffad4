"""Which of the query's words a keyword match holds, named in its reason and in a fallback's note.

"keyword match" alone left a person to guess why a row was shown: "예산 얼마로 정했지?" showed the budget
note under "no close match; showing keyword matches", and "치과 예약" would show a restaurant booking for
예약 just the same. Naming the word ("keyword match: 예산") lets the reader judge the match. A word is named
only where the row's own title or text holds it, read as the full-text index reads them; a row matched
through its neighbours' messages keeps the plain reason. The query's words are named
as the person wrote them (a Korean word without its particle), the dictionary's translations and synonyms as
the row writes them, a translation after the query's word it translates ("고양이 → cat" over an English note), so
that a Korean reader sees how the search read their word. An English query over a Korean note names the note's
word it met the query by, whether the search translated the query's word ("birthday → 생신") or the librarian
glossed the note's (gieok.retrieval.ko_glosses: "deposit → 보증금"); a wrong gloss is then there to see ("day →
일" for "25일").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from gieok.core.models import Hit
from gieok.core.text import index_tokens, query_word_terms, stem_word
from gieok.retrieval import ko_glosses

KEYWORD_REASON = "keyword match"
# A row's text is read up to here, and a search's rows up to the budget (~0.1 ms per 1,000 characters): a long
# file or transcript still names a word it holds near its start, and a list of 200 long rows does not cost
# the search tens of milliseconds for its reasons. Past them a keyword match keeps the plain reason.
_READ_CHARS = 2000
_READ_BUDGET = 40_000
# Korean words whose glosses a search reads to name a word met by one (gieok.retrieval.ko_glosses): ~35 µs each
# the first time (the librarian glossing a row leaves its words known), so at most ~7 ms a search.
_GLOSS_WORDS = 200
_LATIN_WORD = re.compile(r"[A-Za-z0-9\u00df-\u024f]+")


def _holds(tokens: Sequence[str], present: set[str], term: Sequence[str]) -> bool:
    """Whether `term` (a phrase of adjacent tokens) occurs in `tokens` (whose set is `present`)."""
    n = len(term)
    if n == 0 or any(t not in present for t in term):
        return False
    if n == 1:
        return True
    first, want = term[0], list(term)
    return any(tokens[i] == first and tokens[i:i + n] == want for i in range(len(tokens) - n + 1))


def _as_written(words: list[str], stems: list[str], term: Sequence[str]) -> str:
    """How the row writes a translated or synonym term: its words (`words`, stemmed `stems`) whose stems are
    the term's, else the term."""
    if term and all(t.isascii() for t in term):
        n, want = len(term), list(term)
        for i in range(len(stems) - n + 1):
            if stems[i] == want[0] and stems[i:i + n] == want:
                return " ".join(words[i:i + n]).lower()
        return " ".join(term)
    # A Korean term is the bigrams of one word: its first syllable and each bigram's second.
    return term[0] + "".join(g[-1] for g in term[1:]) if term else ""


def words_in(title: str, content: str, query: str, other_terms: Sequence[Sequence[str]] = (),
             sources: Mapping[tuple[str, ...], str] | None = None, *, glosses: bool = False) -> list[str]:
    """The query's words, then the other terms (translations, synonyms), that the row's own text holds;
    a term in `sources` after the query word it translates. With `glosses`, an English query word the row's
    text lacks and one of its Korean words' glosses holds, after it ("deposit → 보증금")."""
    return _words_in(title, content, query_word_terms(query), other_terms, sources or {},
                     _GLOSS_WORDS if glosses else 0)[0]


def _words_in(title: str, content: str, query_words: list[tuple[str, list[str]]],
              other_terms: Sequence[Sequence[str]], sources: Mapping[tuple[str, ...], str],
              gloss_words: int) -> tuple[list[str], int]:
    """`words_in`, reading at most `gloss_words` Korean words' glosses; also returns how many it read."""
    text = content[:_READ_CHARS]
    # The tokens the index holds for the row (core.text.row_index_text, before they are joined).
    tokens = index_tokens(f"{title}\n{text}" if title else text)
    present = set(tokens)
    out: list[str] = []
    missing: list[tuple[str, str]] = []      # English query words the row's own text lacks, with their token
    for word, term in query_words:
        if word in out:
            continue
        if _holds(tokens, present, term):
            out.append(word)
        elif gloss_words and len(term) == 1 and term[0].isascii():
            missing.append((word, term[0]))
    written: tuple[list[str], list[str]] | None = None     # the row's Latin words and their stems, read once
    for other in other_terms:
        if not _holds(tokens, present, other):
            continue
        if written is None:
            words = _LATIN_WORD.findall(f"{title}\n{text}")
            written = (words, [stem_word(w) for w in words])
        w = _as_written(*written, other)
        if (source := sources.get(tuple(other))) is not None:
            w = f"{source} → {w}"
        if w not in out:
            out.append(w)
    # A word no translation named may have met one of the row's Korean words by that word's gloss.
    missing = [(word, t) for word, t in missing if not any(w.startswith(f"{word} → ") for w in out)]
    read = 0
    if missing and ko_glosses.HANGUL_RUN.search(text):
        glossed, read = ko_glosses.glossing_words(text, {t for _w, t in missing}, gloss_words)
        # Not a Korean word named already (a synonym's "커피" is not named again as "coffee → 커피").
        shown = {w.partition(" → ")[2] or w for w in out}
        out.extend(f"{word} → {glossed[t]}" for word, t in missing if t in glossed and glossed[t] not in shown)
    return out, read


def joined(words: Sequence[str]) -> str:
    """The words as one list, a word's translations together: "배포 → deploy/release, 일정"; a word named
    alone and translated too, once, with its translation ("coffee", "coffee → 커피": "coffee → 커피")."""
    out: list[str] = []
    at: dict[str, int] = {}
    sources = {w.partition(" → ")[0] for w in words if " → " in w}
    for w in words:
        if w in sources:
            continue
        source, arrow, target = w.partition(" → ")
        if arrow and source in at:
            out[at[source]] += f"/{target}"
        else:
            if arrow:
                at[source] = len(out)
            out.append(w)
    return ", ".join(out)


def needs_glosses(hits: Sequence[Hit], query: str) -> bool:
    """Whether naming `hits`' words may read Korean words' glosses: an English query whose keyword matches
    include a Korean row. The caller then loads them first (`ko_glosses.ready`), off the event loop."""
    return any(c.isascii() and c.isalpha() for c in query) and any(
        KEYWORD_REASON in h.recall_reason and ko_glosses.HANGUL_RUN.search(h.memory.content[:_READ_CHARS])
        for h in hits)


def name_shared_words(hits: Sequence[Hit], query: str, other_terms: Sequence[Sequence[str]] = (),
                      sources: Mapping[tuple[str, ...], str] | None = None) -> list[str]:
    """Each keyword match's reason names the words it shares with the query; returns every word named: the
    query's own in its order, then the translations and synonyms in the order first named."""
    named: list[str] = []
    query_words = query_word_terms(query)
    # Glosses only where the dictionary is read (`needs_glosses`): naming a reason never waits for a file.
    gloss_words = _GLOSS_WORDS if ko_glosses.loaded() else 0
    budget = _READ_BUDGET
    for h in hits:
        if KEYWORD_REASON not in h.recall_reason:
            continue
        budget -= min(len(h.memory.content), _READ_CHARS) + len(h.memory.title)
        if budget < 0:
            break
        words, read = _words_in(h.memory.title, h.memory.content, query_words, other_terms, sources or {},
                                gloss_words)
        gloss_words -= read
        if words:
            h.recall_reason[h.recall_reason.index(KEYWORD_REASON)] = f"{KEYWORD_REASON}: {joined(words)}"
            named.extend(w for w in words if w not in named)
    own = {w: i for i, (w, _term) in reversed(list(enumerate(query_words)))}
    # Stable: the translations and synonyms keep the order they were first named in.
    return sorted(named, key=lambda w: own.get(w, len(query_words)))


def reason_words(reasons: Sequence[str]) -> list[str]:
    """The words of the rows that a result's keyword reason names (a translation's English, not its Korean),
    for a page to mark in the text as it marks the query's own: "keyword match: 예약 → reservation" gives
    reservation."""
    out: list[str] = []
    for r in reasons:
        if not r.startswith(KEYWORD_REASON + ": "):
            continue
        for item in r[len(KEYWORD_REASON) + 2:].split(", "):
            _source, arrow, targets = item.partition(" → ")
            out.extend(w for w in (targets.split("/") if arrow else [item]) if w and w not in out)
    return out
