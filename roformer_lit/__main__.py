"""``python -m roformer_lit``: the CLI, with signals guarded from the first instant
(:mod:`roformer_lit.training.startup_signals`), freed host memory kept for reuse
(:mod:`roformer_lit.training.host_memory`) and subnormal floats flushed to zero
(:mod:`roformer_lit.training.denormals`)."""

import sys

from roformer_lit.training import startup_signals

if __name__ == "__main__":
    startup_signals.install()  # until imports_done, a signal exits at once with one line
    from roformer_lit.commands import main
    from roformer_lit.training.denormals import flush_denormals
    from roformer_lit.training.host_memory import keep_freed_memory

    startup_signals.imports_done()  # from here a signal raises, and the command cleans up
    keep_freed_memory()
    flush_denormals()  # before any tensor operation starts torch's threads
    code = main()
    startup_signals.command_done(code)  # a signal during shutdown: that code, quietly
    sys.exit(code)
