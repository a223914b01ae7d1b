"""Web tasks: REAL's JSON format, and snapshots of its published registries."""
