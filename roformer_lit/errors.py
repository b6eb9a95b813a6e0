"""The project's exceptions: a user mistake (one line, exit 2) and a diverged run (exit 3)."""


class ConfigError(ValueError):
    """A user mistake: reported as one line, no traceback."""


class TrainingDiverged(RuntimeError):
    """The training loss or a gradient became NaN/inf; the run stopped before the update
    (or a checkpoint with NaN/inf weights was refused). ``step`` is where it happened."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (whitespace runs folded to one space)."""
    return " ".join(str(exc).split())
