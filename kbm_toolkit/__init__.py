"""kbm: measure GPU-kernel benchmark checkers by mutation analysis.

The public API, one name per thing a user does (docs/api.md shows each in use; the `kbm` CLI
calls the same functions). Names load lazily (PEP 562): `import kbm_toolkit` imports none of
the phase subpackages, so neither torch, CUDA nor Textual, and `kbm_toolkit.audit_store` imports
only what scoring needs. The subpackages are imported by name (importlib), never by an import
statement here: they import `__version__` from this module, and the package root stays out of
their import graph.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__version__ = "0.2.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    # the store: open, copy, merge (`Store.merge`)
    "kbm_toolkit.store.store": ("Store",),
    "kbm_toolkit.store.shipped": ("SHIPPED_STORES", "open_shipped", "open_store", "shipped_store_path",
                                  "store_to_read"),
    "kbm_toolkit.store.merge": ("copy_store",),
    "kbm_toolkit.paths": ("default_store_path",),
    # problems, their input specs and substrates (building tensors is `kbm_toolkit.problems.tensors`, torch)
    "kbm_toolkit.problems.problem": ("Problem",),
    "kbm_toolkit.problems.problem_set": ("ProblemSet",),
    "kbm_toolkit.problems.input_spec": ("InputSpec", "official_specs"),
    "kbm_toolkit.problems.seeds": ("trial_seeds",),
    "kbm_toolkit.problems.substrate": ("Substrate", "has_substrate", "substrate_for"),
    "kbm_toolkit.problems.submission": ("Submission", "SubmissionError", "find_submissions"),
    "kbm_toolkit.problems.pack": ("Pack", "PackError", "discover_packs", "init_pack", "load_pack", "use_benches",
                                  "user_packs"),
    # protocols: what a checker does
    "kbm_toolkit.protocols.protocol": ("Protocol", "ProtocolError", "load_protocols", "protocol_toml"),
    "kbm_toolkit.protocols.registry": ("adapter_names", "all_protocols", "default_denominator", "installed",
                                       "load_protocol"),
    # mutation: rules and the campaign (NVRTC, no GPU); the static check (torch's meta device, NVRTC)
    "kbm_toolkit.mutation.rules": ("Rule", "RuleError", "load_rules", "site_counts"),
    "kbm_toolkit.mutation.campaign": ("mutate_problems",),
    "kbm_toolkit.mutation.shape_equivalence": ("judge_problems",),
    "kbm_toolkit.cuda.dryrun": ("check_substrate",),
    # analysis: queries over the store, no GPU
    "kbm_toolkit.analysis.matrix": ("Matrix", "load_matrices"),
    "kbm_toolkit.analysis.score": ("ProtocolResult", "audit", "audit_store", "denominator_words", "run_protocol",
                                   "scored", "survivors", "to_json", "witnessed"),
    "kbm_toolkit.analysis.suite": ("SuiteCurve", "budget_curve", "suite_curve", "write_kbv_suite", "write_suite"),
    "kbm_toolkit.problems.hidden_writer": ("KbvAdmission",),
    "kbm_toolkit.analysis.submissions": ("SubmissionVerdicts", "submission_verdicts"),
    "kbm_toolkit.analysis.targets": ("ceiling", "ceiling_probes", "emit_targets", "targeted_specs"),
    "kbm_toolkit.analysis.listing": ("mutant_listing", "mutant_record", "problem_listing"),
    "kbm_toolkit.analysis.overview": ("Overview", "mutant_detail", "overview"),
    "kbm_toolkit.analysis.runs": ("run_rows", "time_split"),
    # reports and exports
    "kbm_toolkit.report.stryker": ("Export", "export", "stryker_report"),
    "kbm_toolkit.conformance.corpus": ("export_corpus",),
    "kbm_toolkit.report.audit": ("provenance",),
    "kbm_toolkit.report.tables": ("tables_markdown",),
    "kbm_toolkit.report.figures": ("write_report",),
    # GPU work (worker processes): gate substrates, fill the kill matrix, judge submissions
    "kbm_toolkit.evaluation.gate": ("gate_problems",),
    "kbm_toolkit.evaluation.fill": ("RunRequest", "fill_matrix"),
    "kbm_toolkit.evaluation.verify": ("VerifyOptions", "verify_submissions"),
    # errors: the library raises these, the CLI words them
    "kbm_toolkit.errors": ("CompileError", "ContractViolation", "KbmError", "LaunchError", "NoDevice", "OptionError",
                           "OutputError", "ProblemError", "StoreError", "SubstrateError"),
    # the vocabulary the store, the CLI and the reports share
    "kbm_toolkit.vocabulary": ("FAMILIES", "Accounting", "Family", "GateStatus", "MutantStatus", "Outcome",
                               "RecordKind", "RunKind", "SubmissionStatus", "Verdict"),
}

_MODULE_OF: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562), then keep it here."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name, obj=sys.modules[__name__])
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
