"""`python -m chainform.cli`: the same as the `chainform` command."""

from chainform.cli import main

main()
