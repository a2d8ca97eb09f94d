"""Deprecated: `metis_model.transcripts` is now `metis_check.transcripts`."""

from ._moved import package_getattr as _package_getattr

__getattr__ = _package_getattr(__name__)
