"""Trajectories and adapters in one store, file:// or s3:// (MinIO or any S3)."""

from loraloop.store.backends import FileStore, S3Store, Store, open_store

__all__ = ["FileStore", "S3Store", "Store", "open_store"]
