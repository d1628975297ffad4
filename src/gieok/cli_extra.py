"""Commands of the librarian, capture and storage layers, registered on the main app."""

from __future__ import annotations
