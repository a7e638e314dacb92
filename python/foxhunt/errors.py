"""The exceptions of the foxhunt package.

The C library returns a status and a message ("what is wrong; what to do"); the
binding raises :class:`InputError` for bad input (a file, a value, a shape: the CLI's
exit status 2) and :class:`FoxhuntError` for anything else (exit status 1).
"""


class FoxhuntError(RuntimeError):
    """A failure inside libfoxhunt (system, memory, device), or the library not found."""


class InputError(FoxhuntError, ValueError):
    """Bad input: a file, a configuration value, an array's shape or dtype."""
