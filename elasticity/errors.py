"""Errors the elasticity package raises for bad input (shown to users without a traceback)."""


class InputError(ValueError):
    """Input from a user (a trace file, a policy name, a parameter) is malformed; the message says where."""
