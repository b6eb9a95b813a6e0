"""``python -m roformer_lit``: the CLI, with signals guarded from the first instant
(:mod:`roformer_lit.startup_signals`) and freed host memory kept for reuse
(:mod:`roformer_lit.host_memory`)."""

import sys

from roformer_lit import startup_signals

if __name__ == "__main__":
    startup_signals.install()
    try:
        from roformer_lit.cli import main
        from roformer_lit.host_memory import keep_freed_memory
    except KeyboardInterrupt:
        print("error: interrupted (Ctrl-C) while starting; nothing was saved", file=sys.stderr)
        sys.exit(130)
    except startup_signals.Terminated:
        print("error: stopped by SIGTERM while starting; nothing was saved", file=sys.stderr)
        sys.exit(75)
    keep_freed_memory()
    sys.exit(main())
