"""The paper's Table 1 (the pipeline in numbers) and Table 2 (families, witnessed, missed),
computed from the store: Markdown for `kbm report --tables`, HTML for `kbm report --out`."""

from __future__ import annotations

import html as escape
import re
from collections import Counter
from typing import Any, Iterable

from kbm_toolkit.analysis.depth import ARCHITECTURE_LEVEL, Depth, Survival, depth
from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.score import audit_store
from kbm_toolkit.analysis.submissions import NOT_CHECKED, submission_verdicts, verdict_counts
from kbm_toolkit.analysis.unwitnessed import CHANGED, NOT_RUN, SAME, FamilyRemainder, unwitnessed
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.report.audit import incomplete_words, open_words, sample_words
from kbm_toolkit.vocabulary import FAMILIES, Accounting, Verdict

Table = tuple[tuple[str, ...], list[tuple[str, ...]]]
"""A table: its header and its rows."""

OFFICIAL = "kernelbench"
"""The protocol Table 1, Table 5 and the depth figure are for when it is among those reported."""


def official_of(protocols: list[Protocol]) -> Protocol:
    """The protocol the report's official-check tables and figures are for: `OFFICIAL` when it is
    among `protocols`, else the first."""
    return next((p for p in protocols if p.name == OFFICIAL), protocols[0])


def table1(store: Any, official: dict[str, Any],
           columns: list[tuple[str, str | None, bool, dict[str, Any]]] | None = None
           ) -> Table:
    """Table 1 (header, rows): from generated mutants to the witnessed denominator and the
    official check's misses; with `columns` ((header, level, every level but it, its official
    audit) each), one column per part of the pool, as the paper's operator and architecture scales."""
    if columns:
        parts = [dict(_table1_column(store, audit, level, other)) for _, level, other, audit in columns]
        labels = dict.fromkeys(label for part in parts for label in part)  # a row only a later part has goes last
        rows = [(label, *(part.get(label, "–") for part in parts)) for label in labels]
        return ("", *(header for header, _, _, _ in columns)), rows
    return ("", "count"), _table1_column(store, official)


def _table1_column(store: Any, official: dict[str, Any], level: str | None = None,
                   other: bool = False) -> list[tuple[str, str]]:
    """Table 1's rows for the mutants of `level` (every other level with `other`; all without one)."""
    counts = store.status_counts(level, other)
    pool = store.pool_counts(level, other)
    problems, rules = pool["problems"], pool["rules"]
    rows: list[tuple[str, str]] = [
        ("Problems (substrates with mutants)", f"{problems:,}"), ("Mutation rules that fire", f"{rules:,}"),
        ("Mutants generated", f"{sum(counts.values()):,}"),
        ("− non-compiling", f"{counts['compile_error']:,}"), ("− duplicate compiled image", f"{counts['duplicate']:,}"),
        ("− equivalent to the original", f"{counts['equivalent']:,}"),
        ("− crashed or hung on the probe input", f"{counts['quarantined']:,}"),
        ("Distinct mutants", f"{counts['distinct']:,}")]
    sample = official.get("sample")
    if sample:
        rows.append((f"evaluated: {sample_words(sample)} (`kbm run --sample`)", f"{sample['mutants']:,}"))
    if official.get("excluded"):
        rows.append(("problems left out as unrefereeable (`kbm refcheck`)", f"{len(official['excluded'])}"))
    n, d = official["witnessed"], official["detected"]
    rows += [(f"of which {official['witnessed_as']}", f"{n:,}"),
             (f"witnessed, killed by {official['protocol']}", f"{d:,}"),
             (f"witnessed, missed by {official['protocol']}", f"{n - d:,}")]
    if n:
        lo, hi = official["band90_pct"]
        incomplete = incomplete_words(official)
        rows.append(("miss rate (90% band over problems)" + (f" ({incomplete})" if incomplete else ""),
                     f"{100 - official['detection_pct']:.1f}% ({100 - hi:.1f}–{100 - lo:.1f}%)"))
    return rows


def table5(found: Depth) -> Table:
    """Table 5 (header, rows): survival of distinct mutants and misses of witnessed ones, at
    operator scale (levels 1–2) and at architecture scale (level 3), and level 3 by depth."""
    def row(label: str, s: Survival) -> tuple[str, ...]:
        return (label, f"{s.distinct:,}", _pct(s.survival_pct), f"{s.witnessed:,}", _pct(s.miss_pct))

    rows = [row(label, s) for label, s in (("operator scale (levels 1–2)", found.operator),
                                           ("architecture scale (level 3)", found.architecture)) if s.distinct]
    ends = {0: " (input end)", len(found.quartiles) - 1: " (output end)"}
    rows += [row(f"level 3, quartile {q + 1} of depth{ends.get(q, '')}", s)
             for q, s in enumerate(found.quartiles) if s.distinct]
    return ("", "distinct", f"survive {found.protocol}", "witnessed", f"missed by {found.protocol}"), rows


def networks_table(found: Depth) -> Table:
    """Fig. 7b's points as a table (header, rows): per network, its launch count, its distinct
    mutants and the share surviving, its witnessed ones and the share missed; fewest launches first."""
    nets = sorted((n for n in found.networks if n.survival.distinct), key=lambda n: (n.launches or 0, n.problem))
    rows = [(n.problem, f"{n.launches:,}" if n.launches else "–", f"{n.survival.distinct:,}",
             _pct(n.survival.survival_pct), f"{n.survival.witnessed:,}", _pct(n.survival.miss_pct)) for n in nets]
    return ("network", "launches", "distinct", f"survive {found.protocol}", "witnessed",
            f"missed by {found.protocol}"), rows


def _pct(value: float | None) -> str:
    return f"{value:.1f}%" if value is not None else "–"


def table2(audits: dict[str, dict[str, Any]]) -> Table:
    """Table 2 (header, rows): per family, the rules with a witness for the first protocol, and
    each protocol's missed % of its own denominator (`kbm audit`'s), with that denominator's size."""
    first = next(iter(audits.values()))
    families = [f for f in FAMILIES if any(f in a["families"] for a in audits.values())]

    def cell(a: dict[str, Any], f: str) -> str:
        fam = a["families"].get(f)
        return f"{fam['missed_pct']:.1f}% of {fam['witnessed']:,}" if fam else "–"

    rows = [(f, str(first["families"].get(f, {}).get("rules", 0)), *(cell(a, f) for a in audits.values()))
            for f in families]
    rows.append(("all", str(sum(fam["rules"] for fam in first["families"].values())),
                 *(f"{100 - a['detection_pct']:.1f}% of {a['witnessed']:,}" if a.get("detection_pct") is not None
                   else "–" for a in audits.values())))
    return ("family", f"rules (witnessed, {first['protocol']})",
            *(f"{name} missed" + (" (incomplete)" if incomplete_words(a) else "") for name, a in audits.items())), rows


def table6(official: dict[str, Any]) -> Table:
    """Table 6 (header, rows): the problems where the official check misses the most witnessed
    mutants, with the families of those misses."""
    rows = [(r["problem"], f"{r['witnessed']:,}", f"{r['missed']:,}", f"{r['missed_pct']:.1f}%",
             ", ".join(f"{f} {n}" for f, n in r["families"].items()))
            for r in official.get("most_missed_problems", [])]
    return ("problem", "witnessed", f"missed by {official['protocol']}", "missed %", "families missed"), rows


def table_unwitnessed(found: dict[str, FamilyRemainder]) -> Table:
    """Per family: distinct mutants, those no input witnesses, and of those how many gave the
    correct kernel's margin on every input (equivalence candidates), changed the output within
    every tolerance (oracle-blindness candidates), or have no cell on a valid input; and, where
    the store holds `kbm equivalence`'s verdicts, how many are proven to run the original's code
    at every valid input's shapes."""
    proven = any(r.bound is not None for r in found.values())

    def row(label: str, distinct: int, kinds: Any, rules: str, bound: int | None) -> tuple[str, ...]:
        n = sum(kinds.values())
        return (label, f"{distinct:,}", f"{n:,} ({100 * n / distinct:.1f}%)" if distinct else "–",
                *(f"{kinds[k]:,}" for k in (SAME, CHANGED, NOT_RUN)), *((f"{bound or 0:,}",) if proven else ()), rules)

    rows = [row(f, r.distinct, r.kinds, most_unwitnessed_rules(r), r.bound) for f, r in found.items()]
    total = sum((r.kinds for r in found.values()), Counter())
    rows.append(row("all", sum(r.distinct for r in found.values()), total, "",
                    sum(r.bound or 0 for r in found.values())))
    return ("family", "distinct", "unwitnessed", "the correct kernel's margin on every input",
            "changed, within every tolerance", "not run on a valid input",
            *(("the original's code at every input's shapes (proven)",) if proven else ()),
            "rules most unwitnessed"), rows


def most_unwitnessed_rules(r: FamilyRemainder, top: int = 3) -> str:
    """`rule N of M, …`: the family's `top` rules with the most unwitnessed mutants (N of its M
    distinct), ties by name."""
    ranked = sorted(r.rules.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return ", ".join(f"{rule} {n:,} of {r.rule_totals[rule]:,}" for rule, n in ranked)


def unwitnessed_section(store: Any, matrices: list[Any], denominator: list[Protocol],
                        excluded: Iterable[str]) -> tuple[str, Table, list[str]]:
    """The report's section on what no input witnesses: its title, its table, its examples."""
    found = unwitnessed(store, matrices, denominator, excluded)
    title = (f"What no input witnesses: distinct mutants that no valid input of "
             f"{', '.join(sorted(p.name for p in denominator))} kills at that protocol's own tolerance, "
             "by what their cells show")
    return title, table_unwitnessed(found), unwitnessed_examples(found)


def unwitnessed_examples(found: dict[str, FamilyRemainder]) -> list[str]:
    """One line per example: its family and kind, id, problem and site, and its largest margin."""
    lines = []
    for family, r in found.items():
        for kind in (CHANGED, SAME):
            for x in r.examples.get(kind, []):
                margin = f", largest margin {x['margin']:.2e}" if x["margin"] is not None else ""
                lines.append(f"{family}, {kind}: `{x['id'][:12]}` {x['name']}{margin}")
    return lines


def denominator_line(name: str, audit: dict[str, Any]) -> str:
    """`kbv: 16,890 mutants witnessed at 0.001 by any of … (incomplete: …)`: what a protocol's
    figures are over, in the Markdown list and the HTML page alike."""
    return f"{name}: {audit['denominator_words']}" + "".join(f" ({w})" for w in (incomplete_words(audit),
                                                                                  open_words(audit)) if w)


def denominators_markdown(audits: dict[str, dict[str, Any]]) -> str:
    """One line per protocol: the denominator its figures are over."""
    return "\n".join(f"- {denominator_line(name, a)}" for name, a in audits.items())


def submissions_table(store: Any, protocols: list[Protocol]) -> Table:
    """Per protocol, how many of the submissions `kbm verify` judged it accepts, rejects, and so on."""
    counts = verdict_counts(submission_verdicts(store, protocols))
    words = [*Verdict.values(), NOT_CHECKED]
    return ("protocol", *words), [(name, *(f"{c[w]:,}" for w in words)) for name, c in counts.items()]


def markdown(table: Table) -> str:
    """A table as Markdown, the first column left-aligned and the others right."""
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def html(table: Table) -> str:
    """A table as HTML."""
    header, rows = table
    cells = ["<tr>" + "".join(f"<th>{html_text(h)}</th>" for h in header) + "</tr>"]
    cells += ["<tr>" + "".join(f"<td>{html_text(v)}</td>" for v in r) + "</tr>" for r in rows]
    return "<table>" + "".join(cells) + "</table>"


def html_text(text: str) -> str:
    """A cell's Markdown text as HTML: escaped, with `code` spans marked up."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", escape.escape(text))


def tables_markdown(store: Any, chosen: list[Protocol], denominator: list[Protocol],
                    sample: float | None = None, reference: str | None = None,
                    accounting: Accounting = Accounting.TOLERANCE) -> str:
    """`kbm report --tables`: Table 1 (for `official_of(chosen)`) and Table 2, in Markdown;
    with `reference`, every protocol judged against it instead of its own."""
    # one load for every audit: cells passing under every tolerance used cannot matter
    matrices = load_matrices(store, min(p.tolerance for p in chosen + denominator), sample=sample)

    def audited(p: Protocol, part: list[Any]) -> dict[str, Any]:
        return audit_store(store, p, denominator, matrices=part, sample=sample,
                           judging=p.judge.with_reference(reference) if reference else None, accounting=accounting)

    audits = {p.name: audited(p, matrices) for p in chosen}
    official = official_of(chosen)
    columns = None
    networks = [mx for mx in matrices if mx.problem.level == ARCHITECTURE_LEVEL]
    if networks and len(networks) < len(matrices):  # the paper's two scales, side by side
        operators = [mx for mx in matrices if mx.problem.level != ARCHITECTURE_LEVEL]
        columns = [("levels 1–2", ARCHITECTURE_LEVEL, True, audited(official, operators)),
                   ("level 3", ARCHITECTURE_LEVEL, False, audited(official, networks))]
    text = (f"Table 1: the mutation pipeline\n\n{markdown(table1(store, audits[official.name], columns))}\n\n"
            f"Table 2: witnessed mutants by family, and the share each protocol misses\n\n"
            f"{markdown(table2(audits))}\n\nDenominators (as `kbm audit` counts them):\n\n"
            f"{denominators_markdown(audits)}\n\n"
            f"Table 6: the problems where {official.name} misses the most witnessed mutants\n\n"
            f"{markdown(table6(audits[official.name]))}")
    title, table, examples = unwitnessed_section(store, matrices, denominator, audits[official.name]["excluded"])
    text += f"\n\n{title}\n\n{markdown(table)}\n\nExamples (`kbm show ID`):\n\n" + "\n".join(f"- {x}" for x in examples)
    if networks:
        refereed = [mx for mx in matrices if mx.problem.key not in audits[official.name]["excluded"]]
        found = depth(official, refereed, denominator, accounting)
        text += (f"\n\nTable 5: whole networks against single operators, {official.name}, over the mutants "
                 f"{audits[official.name]['witnessed_as']}\n\n{markdown(table5(found))}\n\n"
                 f"Per network (Fig. 7b's points), fewest launches first\n\n{markdown(networks_table(found))}")
    if store.submission_count():
        text += (f"\n\nSubmissions: the {store.submission_count():,} that `kbm verify` judged, by each protocol's "
                 f"verdict\n\n{markdown(submissions_table(store, chosen))}")
    return text
