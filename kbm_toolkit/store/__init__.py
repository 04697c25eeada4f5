"""The store: SQLite as the single source of truth. Every result goes in; every report is a query."""

from kbm_toolkit.store.merge import copy_store
from kbm_toolkit.store.sampling import in_sample
from kbm_toolkit.store.shipped import SHIPPED_STORES, open_shipped, shipped_store_path, store_to_read
from kbm_toolkit.store.store import Store

__all__ = ["SHIPPED_STORES", "Store", "copy_store", "in_sample", "open_shipped", "shipped_store_path",
           "store_to_read"]
