"""The pure model: Kubernetes objects parsed once into frozen, hashable values.

No I/O and no imports from the rest of koordgang. Parse errors derive from
:class:`koordgang.model.errors.ModelError` (a ValueError) and carry the path of the bad field.
"""
