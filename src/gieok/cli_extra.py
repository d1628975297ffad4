"""Commands of the librarian, capture, retrieval and storage layers, registered on the main app.

Kept apart from `gieok.cli` so each layer owns its commands and the core CLI module stays small.
"""

from __future__ import annotations

from gieok import cli_capture, cli_librarian, cli_retrieval, cli_storage
from gieok.cli import app, bench_app, import_app, tags_app

cli_capture.register(app, import_app, bench_app)
cli_librarian.register(app, tags_app, bench_app)
cli_retrieval.register(bench_app)
cli_storage.register(app)
