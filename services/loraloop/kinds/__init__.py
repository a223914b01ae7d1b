"""Kinds of environment: what one brings (spec.py, plain data in three parts and HALO's facet) and the registry
that finds one by name (registry.py)."""
