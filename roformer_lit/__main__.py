"""``python -m roformer_lit``."""

import sys

from roformer_lit.cli import main

if __name__ == "__main__":
    sys.exit(main())
