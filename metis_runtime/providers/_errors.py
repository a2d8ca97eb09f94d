"""Errors of the provider layer beyond the runtime's roots."""

from __future__ import annotations

from .._errors import ProviderError


class ContextOverflowError(ProviderError):
    """The provider refused the request because the prompt is too long.

    Context control catches this and retries once with a smaller transcript.
    """
