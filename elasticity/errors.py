"""Errors the elasticity package raises for bad input (shown to users without a traceback)."""


class InputError(ValueError):
    """Input from a user (a trace file, a policy name, a parameter) is malformed; the message says where."""


def shorten(value: object, limit: int = 40) -> str:
    """A value as an error message may quote it: at most `limit` characters, so a huge input never floods (or
    hangs) the message that rejects it."""
    if isinstance(value, (dict, list)):  # a container (perhaps an expanded alias bomb) is named, never printed
        text = type(value).__name__
    else:
        text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
