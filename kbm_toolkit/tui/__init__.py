"""`kbm tui`: a read-only Textual app over the store (imported only by that command)."""
