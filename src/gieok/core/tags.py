"""The canonical spelling of a tag, shared by the tagger, consolidation and forgetting."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalize_tag"]


def normalize_tag(s: str) -> str:
    """Canonical spelling of a tag: NFKC, lower-case, spaces/underscores → '-', no stray punctuation."""
    s = unicodedata.normalize("NFKC", s).strip().lower()
    s = re.sub(r"[\s_/\\]+", "-", s)
    s = re.sub(r"[^\w.\-+#]", "", s)  # keep c++, c#, node.js
    s = re.sub(r"-{2,}", "-", s).strip("-.")
    return s
