"""Deprecated: `metis_model.trace` is now `metis_trace`."""

from ._moved import package_getattr as _package_getattr

__getattr__ = _package_getattr(__name__)
