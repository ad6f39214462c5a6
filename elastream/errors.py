"""Errors caused by the user's input; the CLI prints them without a traceback."""


class UserError(Exception):
    """A malformed file, flag or manifest; the message names what is wrong."""


def shorten(value: object, limit: int = 40) -> str:
    """A value as an error message may quote it: at most `limit` characters, so a huge input never floods (or
    hangs) the message that rejects it."""
    try:
        text = value if isinstance(value, str) else repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    except RecursionError:
        text = type(value).__name__
    return text if len(text) <= limit else text[:limit] + "…"
