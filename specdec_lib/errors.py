"""One exception type for every error a user can cause.

Knows nothing about models or files: the CLI and the experiment runner catch `SpecdecError` and
print its message on one line (exit status 2); anything else is a bug and keeps its traceback.
"""


class SpecdecError(ValueError):
    """Bad input or an unusable environment, described in one line that names the fix."""
