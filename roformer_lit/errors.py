"""The one exception type for user mistakes."""


class ConfigError(ValueError):
    """A user mistake: reported as one line, no traceback."""
