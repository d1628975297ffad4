"""`python -m gieok.cli`: the installers' fallback when the `gieok` script is not on the agent's PATH.

Running a package's `__main__` imports the package first, so the whole CLI is loaded here anyway: the hook
commands go through `gieok hook …` of the CLI, which runs the same `gieok.capture.hooks.run` as the script's
fast path in `gieok.entry`.
"""

from gieok.cli import main

main()
