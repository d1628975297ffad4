"""Korean verb forms for an English query word, as the best Korean rows write them.

gieok.retrieval.en_ko translates an English query's words into Korean nouns, which a memory writes as the
headword is. A verb it cannot: "What is Jon working on opening?" asks about "댄스 스튜디오 여는 거 준비 중이야",
and 여는 is 열다 ("open") inflected. So the rows are read the other way: each Hangul word of the semantic search's
best Korean rows is looked up as the librarian's glosses look it up (gieok.retrieval.ko_lexicon), and a word
read as a verb with the English word among its senses is searched as the rows write it (여는, 잃었, 샀어).
Only the best rows are read: they are about the question's subject, so the verb they use is the one meant,
and the same form in other rows is what the full-text arm then finds.

A sense counts in its irregular forms too (잃었 is "lose", asked as "lost"; gieok.retrieval.en_inflections). A
verb of very many senses (가다 has 47, among them "work" and "last") counts only for its usual one
(gieok.retrieval.ko_sense_order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from gieok.core.korean import query_stem
from gieok.core.text import function_word, stem_word
from gieok.retrieval import ko_lexicon
from gieok.retrieval.en_inflections import other_forms
from gieok.retrieval.ko_glosses import HANGUL_RUN
from gieok.retrieval.ko_sense_order import usual_sense

__all__ = ["MAX_WORDS", "ROWS", "verb_forms"]

# The best rows read for their verbs: a word not read before costs ~35 µs, and the best rows hold the verb meant.
# Measured on dev (ko 30's English questions, recall@5 / @10): 5 rows 0.691 / 0.798, 10 0.701 / 0.801, 15 0.691 /
# 0.801, 20 0.682 / 0.801, 50 0.682 / 0.782 (further rows are about other things, and lend their verbs).
ROWS = 10
# And at most this many distinct words of them: a captured agent turn can be 64 KB of Korean, and a word read the
# first time costs ~90 µs on the query path (one such row cost 1.1 s). Ten chat messages hold ~250.
MAX_WORDS = 300
_ONE_WORD = re.compile("[a-z]+")
# More senses than this, and a verb counts only for its usual one. Not ko_lexicon.MANY_SENSES (5): the best rows
# have already chosen the verb, and 열다's seven senses ("clear; hold; make; open; …") hold the one meant.
MANY_SENSES = 12


@lru_cache(maxsize=16384)
def _verb_senses(word: str) -> tuple[str, frozenset[str]]:
    """`word` as the full text searches it (its stem as written) and the English word stems of its senses, when
    the dictionary reads it as a verb; ("", ∅) otherwise. Remembered: the best rows come back search after
    search."""
    stem = query_stem(word)
    if len(stem) < 2 or function_word(word):
        return "", frozenset()      # a one-syllable form is no bigram phrase to search
    found = ko_lexicon.lookup_written(word, stem)
    if found is None:
        return "", frozenset()
    key, senses = found
    table = ko_lexicon.senses_table()
    if not (key.endswith("다") or key + "다" in table):
        return "", frozenset()      # a noun: en_ko finds it as the headword is written
    if len(senses) > MANY_SENSES:
        usual = usual_sense(key, senses)
        senses = (usual,) if usual is not None else ()
    one_word = [s for s in senses if _ONE_WORD.fullmatch(s)]
    return stem, frozenset({stem_word(s) for s in one_word} | {f for s in one_word for f in other_forms(s)})


def verb_forms(words: Sequence[str], pool: Sequence[str]) -> dict[str, list[str]]:
    """For each English word of `words` that a verb of the best rows of `pool` has as a sense, those verbs' forms
    as the rows write them, in the rows' order."""
    wanted = {stem_word(w): w for w in words}
    out: dict[str, list[str]] = {}
    read: set[str] = set()
    for text in pool[:ROWS]:
        for h in HANGUL_RUN.findall(text):
            if h not in read:
                if len(read) >= MAX_WORDS:
                    return out
                read.add(h)
            form, stems = _verb_senses(h)
            for s in stems & wanted.keys():
                got = out.setdefault(wanted[s], [])
                if form not in got:
                    got.append(form)
    return out
