"""Errors caused by the user's input; the CLI prints them without a traceback."""


class UserError(Exception):
    """A malformed file, flag or manifest; the message names what is wrong."""
