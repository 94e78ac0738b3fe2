"""``python -m radix_evict.cli``: the same as the ``radix-evict`` console script."""

from radix_evict.cli.app import main

main()
