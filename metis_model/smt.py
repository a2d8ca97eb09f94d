"""Deprecated: `metis_model.smt` is now `metis_proofs`."""

from ._moved import package_getattr as _package_getattr

__getattr__ = _package_getattr(__name__)
