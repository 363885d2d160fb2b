"""`python -m registry`: the command line."""

from registry.cli import main

main()
