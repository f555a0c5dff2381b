"""Capability profiles as data, one module per model family's provider (see docs/providers.md).

Strategy selection reads only a `ModelProfile`; these modules say what each family supports.
"""
