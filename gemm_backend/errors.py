"""Errors raised by GEMM backends."""


class BackendError(ValueError):
    """A backend was asked for something it cannot do (unknown name, bad option, bad input)."""
