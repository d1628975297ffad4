"""`python -m gieok.cli`: the installers' fallback when the `gieok` script is not on the agent's PATH."""

from gieok.entry import main

main()
