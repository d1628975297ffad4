"""The `gieok` command line. Each module below registers its commands on the apps of `gieok.cli.app` when
imported; this package imports every one of them explicitly, so `gieok --help` lists them all."""

from __future__ import annotations

from gieok.cli import anchors, backup, browse, capture, librarian, load, memory, retrieval, serve, storage, team
from gieok.cli.app import app

__all__ = ["anchors", "app", "backup", "browse", "capture", "librarian", "load", "main", "memory", "retrieval",
           "serve", "storage", "team"]


def main() -> None:
    app()
