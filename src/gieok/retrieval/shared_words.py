"""Which of the query's words a keyword match holds, named in its reason and in a fallback's note.

"keyword match" alone left a person to guess why a row was shown: "예산 얼마로 정했지?" showed the budget
note under "no close match; showing keyword matches", and "치과 예약" would show a restaurant booking for
예약 just the same. Naming the word ("keyword match: 예산") lets the reader judge the match. A word is named
only where the row's own title or text holds it, read as the full-text index reads them; a row matched
through its neighbours' messages or a librarian's gloss keeps the plain reason. The query's words are named
as the person wrote them (a Korean word without its particle), the dictionary's translations and synonyms as
the row writes them ("cat" for 고양이 over an English note).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gieok.core.models import Hit
from gieok.core.text import index_tokens, query_word_terms, stem_word

KEYWORD_REASON = "keyword match"
# A row's text is read up to here: a long file or transcript still names a word it holds near its start,
# and reading all of it would cost the search time it is measured by.
_READ_CHARS = 4000
_LATIN_WORD = re.compile(r"[A-Za-z0-9\u00df-\u024f]+")


def _holds(tokens: Sequence[str], term: Sequence[str]) -> bool:
    """Whether `term` (a phrase of adjacent tokens) occurs in `tokens`."""
    n = len(term)
    if n == 0 or n > len(tokens):
        return False
    first = term[0]
    return any(tokens[i] == first and list(tokens[i:i + n]) == list(term) for i in range(len(tokens) - n + 1))


def _as_written(text: str, term: Sequence[str]) -> str:
    """How the row writes a translated or synonym term: its words whose stems are the term's, else the term."""
    if term and all(t.isascii() for t in term):
        words = _LATIN_WORD.findall(text)
        stems = [stem_word(w) for w in words]
        n = len(term)
        for i in range(len(stems) - n + 1):
            if stems[i:i + n] == list(term):
                return " ".join(words[i:i + n]).lower()
        return " ".join(term)
    # A Korean term is the bigrams of one word: its first syllable and each bigram's second.
    return term[0] + "".join(g[-1] for g in term[1:]) if term else ""


def words_in(title: str, content: str, query: str, other_terms: Sequence[Sequence[str]] = ()) -> list[str]:
    """The query's words, then the other terms (translations, synonyms), that the row's own text holds."""
    text = content[:_READ_CHARS]
    # The tokens the index holds for the row (core.text.row_index_text, before they are joined).
    tokens = index_tokens(f"{title}\n{text}" if title else text)
    out: list[str] = []
    for word, term in query_word_terms(query):
        if word not in out and _holds(tokens, term):
            out.append(word)
    for other in other_terms:
        if _holds(tokens, other) and (w := _as_written(f"{title}\n{text}", other)) not in out:
            out.append(w)
    return out


def name_shared_words(hits: Sequence[Hit], query: str, other_terms: Sequence[Sequence[str]] = ()) -> list[str]:
    """Each keyword match's reason names the words it shares with the query; returns every word named: the
    query's own in its order, then the translations and synonyms in the order first named."""
    named: list[str] = []
    for h in hits:
        if KEYWORD_REASON not in h.recall_reason:
            continue
        words = words_in(h.memory.title, h.memory.content, query, other_terms)
        if words:
            h.recall_reason[h.recall_reason.index(KEYWORD_REASON)] = f"{KEYWORD_REASON}: {', '.join(words)}"
            named.extend(w for w in words if w not in named)
    own = [w for w, _term in query_word_terms(query)]
    return sorted(named, key=lambda w: (own.index(w), 0) if w in own else (len(own), named.index(w)))
