"""Errors caused by the user's input; the CLI prints them without a traceback."""

from elasticity.errors import shorten  # noqa: F401  (one way to quote input, for both packages)


class UserError(Exception):
    """A malformed file, flag or manifest; the message names what is wrong."""


