"""The project's exceptions: a user mistake (one line, exit 2) and a diverged run (exit 3)."""

import os
from collections.abc import Iterable

#: The exit code of a user's mistake (one ``error:`` line), for every command and script.
EXIT_USER_ERROR = 2


class ConfigError(ValueError):
    """A user mistake: reported as one line, no traceback.

    ``option``: where a position scheme or attention kernel refuses one of its own options,
    that option's name (``base``; dotted for a nested one, ``inner_kwargs.base``). The
    harness then leads the line with where the user wrote that option
    (``model.layer_plan.types.local.position_kwargs.base: ...``), so the scheme's message
    says what is wrong and need not know where it was written. Without ``option``, a
    message that begins with a path of one of the class's options, wherever written
    (``model.position_kwargs.base must be > 1``), names that option the same way
    (:func:`roformer_lit.registry.construct`)."""

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def refuse_unknown_fields(cls: type, given: Iterable[str], valid: list[str]) -> None:
    """A config dataclass made with a field it has not (``EncoderConfig(hidden=64)``,
    ``TrainingConfig(lr=1e-3)``, ``replace(config, hiden_size=64)``): the user's mistake,
    one :class:`ConfigError` line naming it and the fields (``model.<field>``, as YAML and
    the command line spell them), not Python's ``TypeError``. The configs' ``__new__`` calls
    it with the keyword names given."""
    unknown = [name for name in given if name not in valid]
    if unknown:
        raise ConfigError(
            f"{cls.__name__} has no field(s) {', '.join(map(repr, unknown))}; valid "
            f"fields (model.<field>): {', '.join(valid)}"
        )


class PluginBuildFailed(ConfigError):
    """A plugin's scheme or kernel raised while it was built (its own bug, a signature the
    harness cannot call): one line naming it, its options and where it raised, led by
    where the plugin was chosen (``model.position``, a layer type's ``...types.local.
    position``), not by where an option was written (no option is known to be at fault).
    ``option``: where a scheme or kernel builds another one it was given by name (ssmax's
    ``inner``) and re-raises that one's failure, its own option that chose it; the line is
    then led by where the user wrote that option (``model.position_kwargs.inner``).
    ``raised``: the plugin's own exception, whose traceback the CLI shows on request
    (``ROFORMER_LIT_TRACEBACK=1``); None for a refusal of what the plugin returned."""

    def __init__(
        self, message: str, *, option: str | None = None, raised: BaseException | None = None
    ) -> None:
        super().__init__(message, option=option)
        self.raised = raised


class AbbreviatedOption(ConfigError):
    """A command-line word that only begins options (``--trainer.max_step``: argparse would
    take it for ``--trainer.max_steps``), refused by ``fit``'s parsers
    (:mod:`roformer_lit.commands.whole_options`). ``written``: the option as written;
    ``full``: the options it begins, so a caller that wrote the command line (``sweep``)
    can say it in its own words."""

    def __init__(self, message: str, *, written: str, full: list[str]) -> None:
        super().__init__(message)
        self.written = written
        self.full = full


class TrainingDiverged(RuntimeError):
    """The training loss or a gradient became NaN/inf; the run stopped before the update
    (or a checkpoint with NaN/inf weights was refused). ``step`` is where it happened."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (whitespace runs folded to one space)."""
    return " ".join(str(exc).split())


def describe_os_error(exc: OSError) -> str:
    """``<what went wrong>: <file>`` for an OSError, one line."""
    what = exc.strerror or one_line(exc) or type(exc).__name__
    where = os.fsdecode(exc.filename) if exc.filename is not None else ""
    if exc.filename2 is not None:
        where = f"{where} -> {os.fsdecode(exc.filename2)}"
    return f"{what}: {where}" if where else what


def refused_settings(exc: BaseException) -> ConfigError:
    """The one line for a class that refused its arguments while jsonargparse built it.

    jsonargparse wraps what a class's ``__init__`` raises in its own message, which dumps
    the union's members and the whole namespace (``Does not validate against any of the
    Union subtypes ... Given value: Namespace(...)``). Where the class raised a
    :class:`ConfigError` (``corpus file not found: x.txt``), that line is the refusal:
    it is found on the exception's chain of causes and returned as it is; otherwise the
    message is kept, on one line, after ``invalid settings:``."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConfigError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__
    return ConfigError(f"invalid settings: {one_line(exc)}")
