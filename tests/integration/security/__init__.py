"""Regressions of the hostile probe (issue #26): each test is named after the finding it covers."""
