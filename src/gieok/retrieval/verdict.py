"""Whether a semantic search found anything: the best cosine against the no-match threshold of its (query script,
memory script) pair (gieok.retrieval.ranking), a row judged by every script its vector was computed from."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from gieok.retrieval.ranking import Candidate
from gieok.retrieval.scripts import text_script


def pair_band(query: str, pair_thresholds: Mapping[tuple[str, str], float],
              default: float) -> tuple[dict[str, float], float, float]:
    """The no-match threshold per memory script for this query's script, and their lowest and highest."""
    q_script = text_script(query)
    ths = {k[1]: v for k, v in pair_thresholds.items() if k[0] == q_script}
    return ths, min([default, *ths.values()]), max([default, *ths.values()])


def semantic_verdict(cands: Iterable[Candidate], ths: Mapping[str, float], lo: float, hi: float, default: float,
                     mixed: Mapping[str, set[str]], margin: float = 0.0,
                     no_evidence: Collection[str] = ()) -> tuple[float, float]:
    """(cosine, threshold) of the candidate closest to clearing the threshold of its own (query script, memory
    script) pair: the semantic search found something when that cosine reaches that threshold. A row embedded
    with a message in another script (`mixed`) must clear the higher of its scripts' thresholds; a row that
    shares no word with the query (no BM25 evidence) must clear it by `margin` too (ranking's
    `model_verdict_margin`: just above the threshold a cosine is as likely chance), and so must a row whose only
    shared words the search's own best rows suggested (`no_evidence`, ids). Only candidates whose
    cosine lies between `lo` and `hi` + `margin` need their script worked out; the scan stops at the first
    that clears."""
    best: tuple[float, float, float] | None = None
    for c in sorted((c for c in cands if c.cos is not None), key=lambda c: -(c.cos or 0.0)):
        cos = c.cos or 0.0
        if cos >= hi + margin:
            return cos, hi + margin
        if cos < lo and best is not None:
            break
        scripts = mixed.get(c.memory.id) or {text_script(c.memory.content)}
        shares = bool(c.bm25) and c.memory.id not in no_evidence
        th = max(ths.get(sc, default) for sc in scripts) + (0.0 if shares else margin)
        if cos >= th:
            return cos, th
        if best is None or cos - th > best[0]:
            best = (cos - th, cos, th)
    assert best is not None
    return best[1], best[2]
