"""What every command shares: the global options, and the library calls that turn them into objects."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import click

from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.paths import default_store_path
from kbm_toolkit.problems import pack
from kbm_toolkit.problems.pack import Pack, refused_plugins, user_packs
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.protocols.registry import (all_protocols, default_denominator, installed, load_protocol,
                                            refused_adapters)
from kbm_toolkit.store import Store
from kbm_toolkit.store.shipped import open_store, shipped_name


class Context:
    """The global options (`--store`, `--kernelbench`, `--bench`, `--kbv`), given before or after the command."""

    def __init__(self, store: str | None, kernelbench: str | None, benches: Iterable[str] = (),
                 kbv: str | None = None) -> None:
        self.store_path = Path(store) if store else None
        """The store named on the command line; None means the default (KBM_STORE, else the XDG path)."""
        self.kernelbench = kernelbench
        self._problems: ProblemSet | None = None
        self._packs: list[Pack] | None = None
        self._warned: set[str] = set()
        if kbv:
            self.use_kbv(kbv)
        self.use_benches(benches)

    def use_store(self, store: str) -> None:
        """`--store` given after the command."""
        self.store_path = Path(store)

    def use_kernelbench(self, kernelbench: str) -> None:
        """`--kernelbench` given after the command."""
        self.kernelbench, self._problems = kernelbench, None

    def use_kbv(self, kbv: str) -> None:
        """`--kbv`: the KernelBench-Verified checkout its adapter reads, by `KBM_KBV`."""
        os.environ["KBM_KBV"] = str(Path(kbv).expanduser().absolute())

    def use_benches(self, benches: Iterable[str]) -> None:
        """`--bench` (before or after the command): add the packs, and check every pack loaded now,
        before the command writes anything."""
        pack.use_benches(benches)  # by KBM_BENCH, so kbm's compiling and GPU processes load them too
        self._packs = self._problems = None
        self.packs()

    def packs(self) -> list[Pack]:
        """The packs beside kbm's own (plug-ins, KBM_BENCH, --bench); their rules and adapters are
        loaded too, so that a clash with kbm's is one line here (PackError, RuleError, ProtocolError)."""
        if self._packs is None:
            for line in refused_plugins().values():
                if line not in self._warned:  # once, though a late --bench loads the packs again
                    self._warned.add(line)
                    click.echo(f"Warning: {line}", err=True)
            packs = user_packs()
            if packs:
                load_rules()
                installed()
            self._packs = packs
        return self._packs

    def problems(self) -> ProblemSet:
        """The problems here: the built-in set, the KernelBench checkout if one is given, and the packs."""
        if self._problems is None:
            self._problems = ProblemSet.discover(self.kernelbench, self.packs())
        return self._problems

    def substrate_problems(self, refs: Iterable[str], level: str | None) -> list[Problem]:
        """The problems named, or every one (of `level`) with a substrate; one line when none is."""
        return self.problems().with_substrates(refs, level)

    def resolved_store_path(self) -> Path:
        """The store's path: the one given, else the default."""
        return self.store_path or default_store_path()

    def store(self) -> Store:
        """Your store, for a command that writes (made if missing); a shipped `@NAME` is refused."""
        if shipped_name(self.store_path):
            raise click.UsageError(f"--store {self.store_path} is a store shipped with kbm, read-only; this command "
                                   "writes: give a store of your own (copy one in with `kbm merge`)")
        return Store(self.resolved_store_path())

    def read_store(self, holding: str = "cells") -> Store:
        """The store a reading command reads: the one given (never made), else yours, else the shipped
        pool while yours has no rows in `holding`."""
        return open_store(self.store_path, holding)

    def sometimes_writing_store(self, writes: bool) -> Store:
        """The store of a command that writes only sometimes (`kbm targets` stores checks on a GPU):
        yours when it writes or when you name it by path, else the one a reading command reads."""
        if writes or (self.store_path is not None and not shipped_name(self.store_path)):
            return self.store()
        return self.read_store()

    def protocol(self, ref: str, store: Store | None = None) -> Protocol:
        """A protocol by name or path, or one `store` keeps; one given by path must name only problems
        here or in `store`."""
        known = set(self.problems().problems())
        if store is not None:
            known |= set(store.problem_rows())
        refused = refused_adapters().get(ref)
        if refused:  # the built-in one is used, and the plug-in's author or user hears why
            click.echo(f"Warning: {refused}", err=True)
        return load_protocol(ref, known, store.protocol_toml if store is not None else None)

    def protocols(self, refs: Iterable[str], store: Store | None = None) -> list[Protocol]:
        """The protocols named, or every installed one when none is."""
        refs = list(refs)
        return [self.protocol(r, store) for r in refs] if refs else all_protocols()

    def witnesses(self, refs: Iterable[str], store: Store) -> list[Protocol]:
        """The protocols whose detections define the witnessed mutants (`--denominator`): those named, or
        every installed one and every one `store` keeps (`default_denominator`)."""
        refs = list(refs)
        return self.protocols(refs, store) if refs else default_denominator(store)
