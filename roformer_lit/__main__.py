"""``python -m roformer_lit``: the CLI, with signals guarded from the first instant
(:mod:`roformer_lit.training.startup_signals`) and freed host memory kept for reuse
(:mod:`roformer_lit.training.host_memory`)."""

import sys

from roformer_lit.training import startup_signals

if __name__ == "__main__":
    startup_signals.install()
    try:
        from roformer_lit.commands import main
        from roformer_lit.training.host_memory import keep_freed_memory
    except BaseException as exc:  # a signal while importing, whatever error it surfaced as
        stop = exc if isinstance(exc, KeyboardInterrupt) else startup_signals.stopping_signal()
        if stop is None:
            raise
        sys.exit(startup_signals.report_stop(stop))
    keep_freed_memory()
    sys.exit(main())
