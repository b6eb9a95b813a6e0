"""``python -m roformer_lit``: the CLI, in a process that keeps freed host memory for
reuse (:mod:`roformer_lit.host_memory`)."""

import sys

from roformer_lit.cli import main
from roformer_lit.host_memory import keep_freed_memory

if __name__ == "__main__":
    keep_freed_memory()
    sys.exit(main())
