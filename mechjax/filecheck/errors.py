"""The errors of bad files: one line naming the file, the key or tensor, and what was expected.

Every experiment's CLI turns a ``FileError`` into ``error: <line>`` and a non-zero exit
(``mechjax.cli.experiment.USER_ERRORS``), so a subclass needs no handling of its own.
"""
from __future__ import annotations


class FileError(ValueError):
    """A file that is missing, unreadable, incomplete or not what its reader expects.

    The message is always one line: an underlying library's multi-line text is joined, so a CLI
    prints exactly one line however the file broke.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class WeightsError(FileError):
    """A weights file is missing, unreadable or does not fit the model config."""


class CheckpointError(FileError):
    """A checkpoint folder is missing, unreadable or not of the expected model; the message names
    the path or value and what is allowed."""


class RunError(FileError):
    """A run's workdir whose files are missing or broken, or a seed, step or grid index asked of
    it that does not exist."""
