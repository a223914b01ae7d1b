"""`python -m loraloop.cli` (and `accelerate launch -m loraloop.cli`): the `loraloop` command."""

from loraloop.cli import main

main()
