"""`kbm report --out DIR`: figures (PNG and SVG) and one HTML page that puts them together with
the pipeline table (Table 1) and the family table (Table 2), all computed from the store."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path
from statistics import median
from typing import Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.outputs import output_folder
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.report.audit import incomplete_words, missing_words, provenance
from kbm_toolkit.report.tables import html as table_html
from kbm_toolkit.report.tables import (denominator_line, html_text, official_of, submissions_table, table1, table2,
                                       table6, unwitnessed_section)
from kbm_toolkit.vocabulary import FAMILIES, Accounting
from kbm_toolkit.analysis.depth import ARCHITECTURE_LEVEL, Depth, depth
from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.overview import Overview
from kbm_toolkit.analysis.score import accounting_words, audit_store, band_by_problems, run_protocol, scored
from kbm_toolkit.analysis.suite import budget_curve, cover_sizes
from kbm_toolkit.analysis.targets import ceiling_noise
from kbm_toolkit.analysis.vacuity import RAND_ROW_PEAK, crossover, normalized_rows, zeros_line, zeros_pass

STAGES = ("compile_error", "duplicate", "equivalent", "quarantined", "distinct")


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KbmError("kbm report draws with matplotlib: pip install 'kbm-toolkit[report]'") from None
    return plt


def _save(fig: Any, out: Path, name: str) -> list[str]:
    files = []
    for ext in ("png", "svg"):
        fig.savefig(out / f"{name}.{ext}", dpi=120, bbox_inches="tight")
        files.append(f"{name}.{ext}")
    return files


def pipeline_table(store: Any) -> list[tuple[str, Counter]]:
    """Table 1: mutants by family and screening status (and the quarantine)."""
    rows = store.family_status_counts()
    ordered = [(f, rows[f]) for f in FAMILIES if f in rows]
    total: Counter = Counter()
    for _, c in ordered:
        total.update(c)
    return ordered + [("all", total)]


def write_report(store: Any, protocols: list[Protocol], out: Path, budget_tolerance: float = 1e-2,
                 sample: float | None = None, denominator: list[Protocol] | None = None,
                 accounting: Accounting = Accounting.TOLERANCE) -> Path:
    """Draw every figure into `out` and write `out/index.html`, scoring at most a `sample` share
    of each problem's mutants over the mutants `denominator`'s protocols witness (None: `protocols`'
    own) as `accounting` counts them; return the page's path."""
    plt = _pyplot()
    out = output_folder(out)
    matrices = load_matrices(store, sample=sample)
    denominator = denominator or protocols
    audits = {p.name: audit_store(store, p, denominator, matrices=matrices, sample=sample,  # as `kbm audit` does
                                  accounting=accounting)
              for p in protocols}
    figures: list[tuple[str, list[str]]] = []
    caption = _caption(store, accounting)
    official = official_of(protocols)

    fig, ax = plt.subplots(figsize=(8, 4))
    fig.suptitle(caption, fontsize=8)
    families = [f for f in FAMILIES if any(f in a["families"] for a in audits.values())]
    width = 0.8 / max(len(audits), 1)
    for k, (name, a) in enumerate(audits.items()):
        ax.bar([i + k * width for i in range(len(families))],
               [a["families"].get(f, {}).get("missed_pct", 0.0) for f in families], width, label=_label(a))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(families))], families, rotation=20)
    ax.set_ylabel("witnessed mutants missed (%)")
    ax.legend()
    figures.append(("Missed by family, per protocol", _save(fig, out, "missed_by_family")))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    fig.suptitle(caption, fontsize=8)
    denominators, detected = {}, {}
    for p in protocols:  # each over its own audit's denominator, its unrefereeable problems left out
        kept = [mx for mx in matrices if mx.problem.key not in audits[p.name]["excluded"]]
        mine, _, wit = scored(p, kept, denominator, accounting=accounting)
        denominators[p.name], detected[p.name] = wit, mine.detected
        ranked = sorted(((100.0 * len(w - mine.detected.get(k, set())) / len(w), k) for k, w in wit.items() if w),
                        reverse=True)
        ax.plot(range(1, len(ranked) + 1), [r for r, _ in ranked], marker=".", label=_label(audits[p.name]))
        if p.name == official.name:  # the worst problems by name, as `kbm audit` lists them
            for x, (rate, key) in enumerate(ranked[:5], start=1):
                ax.annotate(_short(key), (x, rate), fontsize=7, xytext=(4, -2), textcoords="offset points")
    ax.set_xlabel("problems, sorted")
    ax.set_ylabel("missed (%)")
    ax.legend()
    figures.append(("Per-problem miss rate, sorted", _save(fig, out, "problem_miss_curve")))
    plt.close(fig)

    figures.append(("Miss patterns (UpSet): which protocols miss each mutant",
                    _upset_figure(plt, Overview(protocols, {mx.problem.key: mx for mx in matrices}, denominators,
                                                detected, accounting), out, caption)))

    per_problem = [(len(w & detected[official.name].get(k, set())), len(w))
                   for k, w in denominators[official.name].items() if w]
    if per_problem:
        fig, ax = plt.subplots(figsize=(6, 4))
        fig.suptitle(caption, fontsize=8)
        sizes = sorted({k for k in (5, 10, 20, 30, 50, 100, 150, 200, 250, len(per_problem)) if k <= len(per_problem)})
        band = band_by_problems(per_problem, sizes)
        ax.fill_between(sizes, [100 * (1 - hi) for _, _, hi in band], [100 * (1 - lo) for _, lo, _ in band], alpha=0.3,
                        label="90% band, problems drawn with replacement")
        total = sum(n for _, n in per_problem)
        ax.axhline(100 * (1 - sum(d for d, _ in per_problem) / total), color="gray", linestyle=":",
                   label=f"{official.name} on all {len(per_problem)} problems")
        ax.set_xlabel("problems in the benchmark")
        ax.set_ylabel(f"witnessed mutants {official.name} misses (%)")
        ax.legend(fontsize=8)
        figures.append(("How wide the miss rate is measured, against the number of problems",
                        _save(fig, out, "band_by_problems")))
        plt.close(fig)

    # set cover needs full rows: the mutants evaluated without --first-kill
    full_rows = matrices if not store.full_rows() else load_matrices(store, full_rows=True, sample=sample)
    curve = budget_curve(full_rows, budget_tolerance, [1, 2, 3, 4, 5],
                         run_protocol(official, full_rows, budget_tolerance).detected)
    fig, ax = plt.subplots(figsize=(6, 4))
    fig.suptitle(caption, fontsize=8)
    ax.plot(curve.budgets, curve.full, marker="o", label="full pool")
    ax.plot(curve.budgets, curve.held_out, marker="o", linestyle="--", label="held-out")
    ax.axhline(curve.baseline_full, color="gray", linestyle=":", label=f"{official.name}'s own inputs")
    ax.set_xticks(curve.budgets)  # whole inputs: no half-integer ticks
    ax.set_xlabel("inputs per problem (budget)")
    ax.set_ylabel(f"detection at {budget_tolerance:g} (%)")
    ax.legend()
    figures.append(("Budget curve (greedy set cover)", _save(fig, out, "budget_curve")))
    plt.close(fig)

    sizes_of = cover_sizes(full_rows, budget_tolerance)
    if sizes_of:
        fig, ax = plt.subplots(figsize=(6, 4))
        fig.suptitle(caption, fontsize=8)
        counts = Counter(sizes_of.values())
        ax.bar(sorted(counts), [counts[k] for k in sorted(counts)])
        ax.set_xticks(sorted(counts))
        ax.set_xlabel(f"inputs that kill every mutant some input kills at {budget_tolerance:g} (greedy)")
        ax.set_ylabel("problems")
        ax.set_title(f"median {median(sizes_of.values()):g}, largest {max(sizes_of.values())}", fontsize=9)
        figures.append(("Full-coverage suite size per problem", _save(fig, out, "cover_sizes")))
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    fig.suptitle(caption, fontsize=8)
    mags = []
    for mx in matrices:
        values = [c["ref_abs_max"] for c in mx.checks.values() if c.get("ref_abs_max") is not None]
        if values:
            mags.append((mx.problem.key, median(values)))
    mags.sort(key=lambda kv: kv[1])
    ax.scatter(range(len(mags)), [m for _, m in mags], s=12, label="median max |reference output|")
    at: dict[float, list[str]] = {}
    for p in protocols:  # one line a tolerance: protocols sharing one would print over each other
        at.setdefault(p.tolerance, []).append(p.name)
    for tolerance, names in at.items():
        ax.axhline(tolerance, linestyle=":", linewidth=1)
        ax.text(0, tolerance, f" {', '.join(names)}: tolerance {tolerance:g}", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("problems, sorted by output magnitude")
    ax.set_ylabel("max |reference output|")
    ax.set_title("Blind band: below a tolerance line, an all-zeros output passes")
    figures.append(("Blind band", _save(fig, out, "blind_band")))
    plt.close(fig)

    figures.append(("Blind band against reduction length", _vacuity_figure(plt, matrices, at, official, out, caption)))

    noise = ceiling_noise(matrices)
    if any(noise.values()):
        fig, ax = plt.subplots(figsize=(7, 4))
        fig.suptitle(caption, fontsize=8)
        for kind, by_scale in noise.items():
            scales = sorted(by_scale)
            if not scales:
                continue
            line, = ax.plot(scales, [median(by_scale[x]) for x in scales], marker="o",
                            label=f"{kind}: median over {max(len(v) for v in by_scale.values())} problems")
            ax.plot(scales, [sorted(by_scale[x])[int(0.9 * (len(by_scale[x]) - 1))] for x in scales], marker=".",
                    linestyle="--", color=line.get_color(), label=f"{kind}: 90th percentile")
        for tolerance, names in at.items():
            ax.axhline(tolerance, linestyle=":", linewidth=1, color="gray")
            ax.text(min(min(v) for v in noise.values() if v), tolerance, f" {', '.join(names)}", va="bottom", fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("input scale (the official draw, or normal(0, 1), times this)")
        ax.set_ylabel("correct kernel's margin (smallest passing tolerance)")
        ax.set_title("Variance ceiling: above a tolerance line, an input rejects correct kernels", fontsize=9)
        ax.legend(fontsize=7)
        figures.append(("Correct-kernel noise against input scale", _save(fig, out, "ceiling_noise")))
        plt.close(fig)

    if any(mx.problem.level == ARCHITECTURE_LEVEL for mx in matrices):
        # the paper's Fig. 7 is the official check's, as Table 1 here
        refereed = [mx for mx in matrices if mx.problem.key not in audits[official.name]["excluded"]]
        figures.append(("Whole networks: survival against launch count, and by depth",
                        _depth_figure(plt, depth(official, refereed, denominator, accounting), out, caption)))

    page = out / "index.html"
    left = unwitnessed_section(store, matrices, denominator, audits[official.name]["excluded"])
    page.write_text(_html(store, audits, figures, protocols, left))
    return page


def _vacuity_figure(plt: Any, matrices: list[Any], at: dict[float, list[str]], official: Protocol,
                    out: Path, caption: str) -> list[str]:
    """The paper's Fig. 2b, left: an all-zeros output's error on a torch.rand softmax row (its
    largest |f|, about e / ((e - 1) d)) against each tolerance's line, with the stored problems
    whose rows sum to one at their `dim` (filled: `official`'s check fires on zeros, open: it passes them)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    fig.suptitle(caption, fontsize=8)
    lengths = [2.0 ** k for k in range(1, 21)]
    ax.plot(lengths, [RAND_ROW_PEAK / d for d in lengths], color="tab:blue",
            label="all-zeros error on a torch.rand softmax row: e / ((e - 1) d)")
    for tolerance, names in at.items():
        line = zeros_line(tolerance, tolerance)
        ax.axhline(line, linestyle=":", linewidth=1, color="gray")
        ax.text(lengths[0], line, f" {', '.join(names)}: passes zeros past d = {crossover(tolerance, tolerance):,.0f}",
                va="bottom", fontsize=7)
    for key, d, largest in normalized_rows(matrices):
        fires = not zeros_pass(largest, official.judge.atol, official.judge.rtol)
        ax.scatter([d], [largest], s=30, color="tab:red", facecolors="tab:red" if fires else "none")
        ax.annotate(_short(key), (d, largest), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("reduction length d (the problem's dim)")
    ax.set_ylabel("max |reference output| = an all-zeros output's error")
    ax.set_title(f"Vacuity: under a line, an all-zeros output passes ({official.name}, official trials: "
                 "open if it passes)", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    files = _save(fig, out, "blind_band_by_length")
    plt.close(fig)
    return files


def _upset_figure(plt: Any, data: Overview, out: Path, caption: str, top: int = 15) -> list[str]:
    """The paper's Fig. 5: the most common miss patterns, as bars over a dot matrix of protocols
    (filled: missed; open: detected; none: not in that protocol's denominator)."""
    patterns = data.patterns()[:top]
    names = [p.name for p in data.protocols]
    fig, (bars, dots) = plt.subplots(2, 1, figsize=(max(6, 0.5 * len(patterns) + 2), 2 + 0.4 * len(names) + 3),
                                     gridspec_kw={"height_ratios": [3, max(1, 0.4 * len(names))]}, sharex=True)
    fig.suptitle(caption, fontsize=8)
    xs = range(len(patterns))
    bars.bar_label(bars.bar(xs, [len(ids) for _, ids in patterns]), fontsize=7)
    bars.set_ylabel("witnessed mutants")
    for x, (pattern, _) in zip(xs, patterns):
        for y, missed in enumerate(pattern):
            if missed is not None:
                dots.scatter(x, y, s=40, color="black" if missed else "white", edgecolors="black")
    dots.set_yticks(range(len(names)), [f"{n} misses" for n in names], fontsize=8)
    dots.set_ylim(-0.5, len(names) - 0.5)
    dots.set_xticks([])
    files = _save(fig, out, "miss_patterns")
    plt.close(fig)
    return files


def _caption(store: Any, accounting: Accounting) -> str:
    """Every figure's subtitle: the store, the dates of its cells and the accounting."""
    rows = store.cell_provenance()
    dates = sorted({r[k][:10] for r in rows for k in ("first", "last")})
    when = f"cells {dates[0]} to {dates[-1]}" if len(dates) > 1 else f"cells {dates[0]}" if dates else "no cells"
    name = Path(store.path).name if store.path else "in-memory store"
    cached = re.fullmatch(r"(.+)-[0-9a-f]{16}-m\d+\.db", name)  # a shipped store's unpacked copy
    return f"{'@' + cached[1] if cached else name}; {when}; witnesses in {accounting_words(accounting)}"


def _short(key: str) -> str:
    """`level2/49_ConvTranspose3d_Softmax_Sigmoid` as a figure labels it: `level2/49`."""
    level, _, name = key.partition("/")
    return f"{level}/{name.partition('_')[0]}"


def _depth_figure(plt: Any, found: Depth, out: Path, caption: str = "") -> list[str]:
    """The paper's Fig. 7: each network's survival against its launch count, and survival by
    quartile of depth over every network's placed mutants."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    fig.suptitle(caption, fontsize=8)
    nets = [n for n in found.networks if n.launches and n.survival.distinct]
    left.scatter([n.launches for n in nets], [n.survival.survival_pct for n in nets], s=16)
    for n in nets:  # the problem's number: level3/11_VGG16 is 11
        left.annotate(n.problem.rpartition("/")[2].partition("_")[0], (n.launches, n.survival.survival_pct),
                      fontsize=7, xytext=(2, 2), textcoords="offset points")
    left.set_xscale("log")
    left.set_xlabel("kernel launches in the official forward")
    left.set_ylabel(f"distinct mutants surviving {found.protocol} (%)")
    left.set_title("per network")
    quartiles = [(q, s) for q, s in enumerate(found.quartiles) if s.distinct]
    right.bar([q + 1 for q, _ in quartiles], [s.survival_pct for _, s in quartiles])
    right.set_xticks([q + 1 for q, _ in quartiles],
                     [f"Q{q + 1}\n({s.distinct:,})" for q, s in quartiles])
    right.set_xlabel("quartile of depth, input end first (placed mutants)")
    right.set_ylabel(f"surviving {found.protocol} (%)")
    right.set_title("by depth")
    files = _save(fig, out, "depth")
    plt.close(fig)
    return files


def _label(audit: dict[str, Any]) -> str:
    """A protocol as a legend names it: `fuzz-shapes (incomplete)` when its figures lack cells."""
    return audit["protocol"] + (" (incomplete)" if incomplete_words(audit) else "")


def _html(store: Any, audits: dict[str, dict[str, Any]], figures: list[tuple[str, list[str]]],
          protocols: list[Protocol], unwitnessed: tuple[str, Any, list[str]]) -> str:
    e = html.escape
    parts = ["<!doctype html><meta charset='utf-8'><title>kbm report</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}td:first-child{text-align:left}</style>",
             "<h1>kbm report</h1>"]
    first = next(iter(audits.values()), {})
    parts.append(f"<p>{e(provenance(store))}</p>")
    for name, a in audits.items():  # beside every figure and table that shows it, it reads "(incomplete)"
        if incomplete_words(a):
            parts.append(f"<p class='incomplete'><b>{e(name)} (incomplete)</b>: "
                         f"{e(missing_words(a['missing']['checks'], a['missing']['cells']))}; its "
                         f"figures count only the cells it has (<code>kbm audit -a {e(name)}</code> prints the "
                         "<code>kbm run</code> that fills them).</p>")
    parts.append("<h2>Mutants by family and screening stage</h2><table><tr><th>family</th><th>generated</th>"
                 + "".join(f"<th>{e(s.replace('_', ' '))}</th>" for s in STAGES) + "</tr>")
    for family, counts in pipeline_table(store):
        parts.append(f"<tr><td>{e(family)}</td><td>{sum(counts.values()):,}</td>"
                     + "".join(f"<td>{counts.get(s, 0):,}</td>" for s in STAGES) + "</tr>")
    parts.append("</table>")
    official = audits[official_of(protocols).name] if protocols else first
    parts.append(f"<h2>Table 1: the mutation pipeline and {e(official.get('protocol', ''))}</h2>"
                 + table_html(table1(store, official)))
    parts.append("<h2>Table 2: witnessed mutants by family, and the share each protocol misses</h2>"
                 + table_html(table2(audits)) + "<p>Denominators, as <code>kbm audit</code> counts them:</p><ul>"
                 + "".join(f"<li>{e(denominator_line(name, a))}</li>" for name, a in audits.items()) + "</ul>")
    parts.append(f"<h2>Table 6: the problems where {e(official.get('protocol', ''))} misses the most witnessed "
                 "mutants</h2>" + table_html(table6(official)))
    title, table, examples = unwitnessed
    parts.append(f"<h2>{e(title)}</h2>" + table_html(table) + "<p>Examples (<code>kbm show ID</code>):</p><ul>"
                 + "".join(f"<li>{html_text(x)}</li>" for x in examples) + "</ul>")
    if store.submission_count():
        parts.append(f"<h2>Submissions: the {store.submission_count():,} that kbm verify judged, by each protocol's "
                     "verdict</h2>" + table_html(submissions_table(store, protocols)))
    for title, files in figures:
        parts.append(f"<h2>{e(title)}</h2><img src='{e(files[1])}' alt='{e(title)}' style='max-width:100%'>")
    return "\n".join(parts)
