"""`python -m analyzer` is `ddtriage`."""

from .cli import main

main()
