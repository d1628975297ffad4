"""Tokenising text for full-text search, the same way for every backend.

SQLite's tokenizers cannot find Korean words: `unicode61` keeps particles attached (`커피를`), `trigram`
misses 2-syllable words (`회의`, `커피`). So we index a *prepared* form of the text instead:
- English (and other Latin-script) words, lower-cased and Snowball-stemmed: "meetings" → "meet";
- runs of Hangul/Kana/Han characters as overlapping character bigrams: "회의를" → "회의 의를", so a
  2-syllable word is one token and a longer word is a phrase of adjacent bigrams;
- numbers as they are.
Backends index this string with a plain whitespace tokenizer (FTS5 unicode61, Postgres 'simple').
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

from gieok.core.korean import KO_STOPWORDS, is_be_or_did, is_suffix, query_stem, without_counters
from gieok.core.korean_stems import empty_verb_form, prefix_stems, verb_forms

_CJK_CHARS = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
# One pass over the lower-cased text: a Latin/digit word, or a run of CJK characters.
_TOKEN = re.compile(f"[a-z0-9\u00df-\u024f]+|[{_CJK_CHARS}]+")

_stemmer = Stemmer.Stemmer("english")

# Only for queries: dropping these keeps an OR query from matching half the store. Documents keep them
# (BM25's idf already makes them cheap). The tokenizer splits at apostrophes, so contractions and possessives
# are listed by their fragments ("didn't" → didn t, "Melanie's" → melanie s): a bare "s" matched every
# possessive in the store. "per" is a preposition like "for": "how much food per meal for the dog?" put "Public
# API rate limit is 500 requests per minute" above the dog's food note (cosine 0.82 against 0.90).
STOPWORDS = frozenset("""
    a about above after again against all am an and any are as at be because been before being below between
    both but by can did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now
    of off on once only or other our ours ourselves out over own per same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself yourselves
    anything something ever tell remember recall said say
    s t d ll m re ve didn doesn don isn aren wasn weren hasn haven hadn won wouldn couldn shouldn
""".split())


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def stem_word(word: str) -> str:
    """The full-text token of one English word ("camping" → camp)."""
    return _stem(word.lower())


def _is_hangul(run: str) -> bool:
    return "\uac00" <= run[0] <= "\ud7af"


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return list(map(str.__add__, run, run[1:]))


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(token, is_cjk_run) in order."""
    return [(w, w[0] >= "\u1100") for w in _TOKEN.findall(text.lower())]


@lru_cache(maxsize=65536)
def _word_tokens(w: str) -> tuple[str, ...]:
    # Words repeat a lot in real text; caching the whole word's tokens keeps the hot path cheap.
    return tuple(_cjk_grams(w)) if w[0] >= "\u1100" else (str(_stemmer.stemWord(w)),)


def index_tokens(text: str) -> list[str]:
    """Tokens of a document, in order (bigram phrases depend on adjacency)."""
    out: list[str] = []
    for w in _TOKEN.findall(text.lower()):
        out.extend(_word_tokens(w))
    return out


def index_text(text: str) -> str:
    """The prepared string a backend's full-text index stores."""
    return " ".join(index_tokens(text))


def row_index_text(title: str, content: str) -> str:
    """What a backend's full-text index stores for a row: its title (the author of a message, a note's
    heading) and its content, prepared."""
    return index_text(f"{title}\n{content}" if title else content)


def query_terms(query: str) -> list[list[str]]:
    """A query as a list of terms; each term is a phrase (list of adjacent tokens).

    An English word is a one-token phrase; a Korean word is the phrase of the bigrams of its stem (particles
    and endings cut: gieok.core.korean).
    Stopwords are dropped unless nothing else is left.
    """
    terms, fallback = _split_terms(query)
    seen: set[tuple[str, ...]] = set()
    unique = []
    for t in terms or fallback:
        if tuple(t) not in seen:
            seen.add(tuple(t))
            unique.append(t)
    return unique


def _word_terms(query: str) -> list[tuple[str, list[str], bool]]:
    """(the word as a person reads it, its term, whether it is a stopword or function word) per query word: a
    Korean word's stem, particles and endings cut, as the bigrams of that stem."""
    out: list[tuple[str, list[str], bool]] = []
    for w, cjk in _tokens(without_counters(query)):
        if cjk:
            stem = query_stem(w) if _is_hangul(w) else w
            out.append((stem, _cjk_grams(stem), function_word(w)))
        else:
            out.append((w, [_stem(w)], w in STOPWORDS))
    return out


def _split_terms(query: str) -> tuple[list[list[str]], list[list[str]]]:
    """(content terms, stopword terms) of a query, in order."""
    terms: list[list[str]] = []
    fallback: list[list[str]] = []
    for _w, term, stop in _word_terms(query):
        (fallback if stop else terms).append(term)
    return terms, fallback


def query_word_terms(query: str) -> list[tuple[str, list[str]]]:
    """Each content word of a query as a person reads it, with its term, in order: how a result names the words
    it shares with the query."""
    return [(w, term) for w, term, stop in _word_terms(query) if not stop]


def has_content_words(query: str) -> bool:
    """Whether a query says more than question and function words ("뭐 했어?", "what did I do?" do not)."""
    return bool(_split_terms(query)[0])


# English words worth a vocabulary entry: three letters or more, no digits (numbers match as they are).
_DOC_WORD = re.compile(r"[a-z]{3,24}")


def doc_words(text: str) -> list[str]:
    """The distinct English words of a memory that a user's vocabulary keeps (lower-case, stopwords out), for the
    cross-lingual bridge (gieok.retrieval.bridge)."""
    return list(dict.fromkeys(w for w in _DOC_WORD.findall(text.lower()) if w not in STOPWORDS))


_HANGUL_RUN = re.compile("[\uac00-\ud7af]+")


def korean_word_forms(text: str) -> list[tuple[str, str]]:
    """(word as written, stem) for the Korean content words of a text, each stem once; the stem is the word
    without particles and endings, as the full-text query has it."""
    out: list[tuple[str, str]] = []
    for w in _HANGUL_RUN.findall(without_counters(text)):
        stem = query_stem(w)
        if function_word(w) or any(stem == s for _w, s in out):
            continue
        out.append((w, stem))
    return out


@lru_cache(maxsize=16384)
def function_word(w: str) -> bool:
    """A Korean particle, ending or function word standing alone (대해, 것에, 뭐였, 있지): no word to look for."""
    return (w in KO_STOPWORDS or query_stem(w) in KO_STOPWORDS or is_suffix(w) or is_be_or_did(w)
            or empty_verb_form(w))


PREFIX = "*"


def prefix_terms(query: str) -> list[list[str]]:
    """The one-syllable verb stems of a query's Korean words (gieok.core.korean_stems), each a one-token term
    `["쓰*"]` that matches every token beginning with 쓰. A search adds them to `query_terms`; a backend reads
    them with `term_prefix`."""
    out: list[list[str]] = []
    for w, cjk in _tokens(without_counters(query)):
        # Not a particle standing alone after a Latin word ("Caroline은": 은 is no past adnominal of 으) nor a
        # function word ("뭐였어" → 뭐*).
        if cjk and _is_hangul(w) and not function_word(w):
            out.extend([s + PREFIX] for s in prefix_stems(w) if [s + PREFIX] not in out)
    return out


def verb_form_terms(prefixes: list[list[str]]) -> list[list[str]]:
    """Prefix terms (`prefix_terms`) narrowed to the tokens that are their stems as verbs: `["쓰*"]` →
    `["쓰고"]`, `["쓰는"]`, …. A keyword fallback shows these as the query's own words ("뭘 썼지?" → 편지를
    쓰고), where the bare prefix would also show 가족 for 갔어."""
    return [[form] for term in prefixes if (stem := term_prefix(term)) for form in verb_forms(stem)]


def term_prefix(term: list[str]) -> str | None:
    """The stem of a prefix term (`["쓰*"]` → 쓰), None for a phrase. Only a word's characters make one: the
    backends put the stem into their query syntax."""
    if len(term) == 1 and len(term[0]) > 1 and term[0].endswith(PREFIX) and term[0][:-1].isalnum():
        return term[0][:-1]
    return None


def estimate_tokens(text: str, chars_per_token: float = 1.7) -> int:
    """The seed's char-approximate token count: no tokenizer on the hot path."""
    return int(len(text) / chars_per_token) + 1
