"""Errors caused by the user's input; the CLI prints them without a traceback."""


class UserError(Exception):
    """A malformed file, flag or manifest; the message names what is wrong."""


def shorten(value: object, limit: int = 40) -> str:
    """A value as an error message may quote it: at most `limit` characters, so a huge input never floods (or
    hangs) the message that rejects it."""
    if isinstance(value, (dict, list)):  # a container (perhaps an expanded alias bomb) is named, never printed
        text = type(value).__name__
    else:
        text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
