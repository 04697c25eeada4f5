"""Protocols: what a benchmark's checker does (input specs and a tolerance), and the adapters that declare them."""
