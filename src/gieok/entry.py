"""The `gieok` console script. Agent hooks run on every prompt, so a plain hook call skips building the CLI
(typer, rich and every layer's commands cost ~150 ms of imports); everything else goes to `gieok.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "hook" and argv[1] in ("claude-code", "codex") and "--help" not in argv:
        from gieok.capture.hooks import main as hook_main
        raise SystemExit(hook_main(argv[1:]))
    from gieok.cli import main as cli_main
    cli_main()


if __name__ == "__main__":
    main()
