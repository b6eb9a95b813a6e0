"""Rewrite the generated regions of the study pages from the raw outputs in ``docs/bench/``.

    python scripts/study_pages.py           # rewrite every generated region
    python scripts/study_pages.py --check   # exit 0 only if the pages equal what the data give

The studies are the package :mod:`roformer_lit.results.study`; this is its command.
"""

import sys

from roformer_lit.results.study.pages import build_parser, main

__all__ = ["build_parser", "main"]  # build_parser: the command's arguments, for the tests

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
