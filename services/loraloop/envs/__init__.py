"""Environments: the contract (base.py) and each kind's own package (shell/, web/, tau2/, browsergym/), which
defines the kind's `KIND` in its kind.py. The registry that finds a kind by name is kinds/registry.py."""
