"""Generators of the sparse family (spec 001; contract docs/sparse.md)."""
