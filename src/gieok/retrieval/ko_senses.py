"""Which of a Korean word's dictionary senses a user's English memory holds (gieok.retrieval.bridge), and the
memory's own word for a sense it words otherwise.

The dictionary (gieok.retrieval.ko_lexicon) and the people who wrote the memory do not always choose the same
English word: 자전거 is "bicycle" where the memory says "biking", 할머니 "grandmother" where it says "grandma",
조사하다 "investigate" where it says "researching". When none of a word's senses is in the vocabulary, the bridge
found no term for it at all, as for a word the memory does not hold. `reworded` takes, for the word's usual senses,
the vocabulary word nearest each (the model's English-to-English cosine, standing out from the sense's mean over the
vocabulary) that is not just one of the sense's own words ("resting area" → area) and is also close to the Korean
word itself (which kept "inactive" from becoming "active").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable

import numpy as np

from gieok.core.text import stem_word
from gieok.retrieval import en_inflections, ko_lexicon, ko_sense_order
from gieok.retrieval.ko_lexicon import sense_words
from gieok.retrieval.vocab_nearest import MIN_COSINE, TOP_PER_WORD, nearest_scored

__all__ = ["STEMS", "dictionary_terms", "reworded", "to_reword"]


class _StemIndex:
    """Full-text token → row of a user's vocabulary, kept per vocabulary list (the store appends to the same
    list as the vocabulary grows, so only new words are indexed)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._by_list: OrderedDict[int, tuple[list[str], dict[str, int]]] = OrderedDict()

    def get(self, terms: list[str]) -> dict[str, int]:
        got = self._by_list.get(id(terms))
        if got is None or got[0] is not terms:
            got = (terms, {})
            self._by_list[id(terms)] = got
        self._by_list.move_to_end(id(terms))
        while len(self._by_list) > self.size:
            self._by_list.popitem(last=False)
        index = got[1]
        for i in range(len(index), len(terms)):
            index.setdefault(stem_word(terms[i]), i)
        return index


STEMS = _StemIndex()


def dictionary_terms(word_vec: np.ndarray, senses: Iterable[str], index: dict[str, int], matrix: np.ndarray,
                     *, top: int = TOP_PER_WORD) -> list[list[str]]:
    """The dictionary senses of one Korean word that the user's memory uses (every word of the sense is in its
    vocabulary, or a one-word sense's irregular form is), best first by the embedding model's cosine to the
    Korean word: a full-text term each (a two-word sense is a phrase), at most `top`. Call after
    `en_inflections.ready()`."""
    scored: list[tuple[float, list[str]]] = []
    for sense in senses:
        words = sense_words(sense)
        if not words:
            continue
        if not _held(words, index):
            scored.extend((float(matrix[index[t]] @ word_vec), [t]) for t in _held_as_other(words, index))
            continue
        toks = [stem_word(w) for w in words]
        scored.append((float(np.mean([matrix[index[t]] @ word_vec for t in toks])), toks))
    out: list[list[str]] = []
    for _cos, toks in sorted(scored, key=lambda t: -t[0]):
        if toks not in out:
            out.append(toks)
        if len(out) >= top:
            break
    return out


# A sense is reworded to a vocabulary word standing this far above the sense's mean cosine to the vocabulary and
# reaching REWORD_MIN (English to English, so higher than a Korean word's bars). Measured on dev, Korean questions
# over English memory (recall@5 / @10 / @20 from 0.683 / 0.774 / 0.825), before the two checks in `reworded`:
# 0.08 0.688 / 0.778 / 0.829; 0.06 0.687 / 0.775 / 0.831; 0.10 found nothing; 0.05 with a bar of 0.80: 0.680 /
# 0.769 / 0.829. With them (as built): 0.688 / 0.779 / 0.830. The dev questions asked 87 times for a word none of
# whose senses the memory held and got 15 words: grandmother → grandma, investigate → research, bicycle → biking,
# teenager → teen, festival → fest, bank teller → banker; one of them wrong (inclination → clinging). A draft
# without the two checks (four senses in the dictionary's order) found 27, among them resting area → area, give
# speech → give, inactive → active, haji → hah.
REWORD_STAND_OUT = 0.08
REWORD_MIN = 0.85
# Senses tried per word, its usual one first (gieok.retrieval.ko_sense_order): each is one more short text for the
# query model (~7 ms here, once per user and sense: embed_words remembers it). Two, four or eight senses measured
# the same on dev.
REWORD_SENSES = 2


async def to_reword(forms: list[tuple[str, str]], index: dict[str, int],
                    adnominal: Collection[str] = ()) -> dict[int, list[str]]:
    """For each query word (as written, stem) that the dictionary knows whole but none of whose senses `index` (a
    vocabulary's full-text tokens) holds: its senses to reword, usual first. `adnominal`: the words read as a
    verb first (gieok.core.korean_adnominal)."""
    known: dict[int, tuple[str, tuple[str, ...]]] = {}
    for i, (written, w) in enumerate(forms):
        found = ko_lexicon.lookup_written(written, w, by_first_syllables=False, adnominal=written in adnominal)
        if found is not None and not any(_held(ws, index) or _held_as_other(ws, index)
                                         for s in found[1] if (ws := sense_words(s))):
            known[i] = found
    if known:
        await ko_sense_order.ready()
    out: dict[int, list[str]] = {}
    for i, found in known.items():
        usual = ko_sense_order.usual_sense(*found)
        ordered = sorted(found[1], key=lambda s: s != usual)
        phrases = [" ".join(ws) for s in ordered if (ws := sense_words(s))][:REWORD_SENSES]
        if phrases:
            out[i] = phrases
    return out


def _held_as_other(words: list[str], index: dict[str, int]) -> list[str]:
    """The vocabulary tokens of a one-word sense's other forms, where the memory holds the sense only in a form
    the stemmer keeps apart ("bought" for "buy", "went" for "go": gieok.retrieval.en_inflections)."""
    return [t for t in en_inflections.other_forms(words[0]) if t in index] if len(words) == 1 else []


def _held(words: list[str], index: dict[str, int]) -> bool:
    """Every word of a sense is in the vocabulary (`index`, its full-text tokens)."""
    return all(stem_word(x) in index for x in words)


def reworded(phrases: list[str], phrase_vecs: np.ndarray, sims: np.ndarray, word_vec: np.ndarray, vocab: list[str],
             matrix: np.ndarray, index: dict[str, int]) -> list[list[str]]:
    """The memory's own word for a Korean word's senses `phrases` (their query vectors `phrase_vecs`, and those
    vectors' cosines to the vocabulary `sims`; the Korean word's `word_vec`), as one full-text term, or nothing."""
    found = nearest_scored(phrase_vecs, vocab, matrix, top=3, min_cos=REWORD_MIN, stand_out=REWORD_STAND_OUT,
                           sims=sims)
    best: list[tuple[float, str]] = []
    for phrase, got in zip(phrases, found, strict=True):
        own = {stem_word(x) for x in phrase.split()}
        # The nearest word that is not the sense's own: "memorial hall" → memorial, "give speech" → give are
        # half a sense; both words together were not in the vocabulary.
        near = next(((x, m) for x, m in got if stem_word(x) not in own), None)
        if near is not None and float(matrix[index[stem_word(near[0])]] @ word_vec) >= MIN_COSINE:
            best.append((near[1], near[0]))
    return [[stem_word(max(best)[1])]] if best else []
