"""Evaluation: GPU work in isolated worker processes — the gate, the kill matrix, reference checks — and filling it on request."""
