"""The Textual app: overview, miss patterns, problems and submissions as modes; mutant lists,
details and a submission's inputs pushed.

Data comes from `kbm_toolkit.analysis.overview` in thread workers (each opens its own read-only store), so
the UI thread never queries SQLite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from kbm_toolkit.analysis.overview import Overview, mutant_detail, overview
from kbm_toolkit.analysis.submissions import SubmissionVerdicts, submission_verdicts, verdict_counts
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.report.audit import counted, missing_words, sample_words
from kbm_toolkit.store import Store
from kbm_toolkit.vocabulary import Accounting


def _incomplete(data: Overview, protocol: str) -> str:
    """"incomplete: ... never checked ..." for a protocol whose figures lack cells, else ""."""
    missing = data.missing.get(protocol)
    return f"incomplete: {missing_words(missing['checks'], missing['cells'])}" if missing else ""


def _pct(x: float | None, of: int | None = None) -> Text:
    if x is None:
        return Text("-")
    style = "green" if x < 5 else "yellow" if x < 20 else "red"
    return Text(f"{x:5.1f}%" + (f" of {of:,}" if of is not None else ""), style=style, justify="right")


class DataScreen(Screen):
    """A screen that fills itself from the app's Overview once it is loaded: a mode's own screen, so escape
    has nothing to go back to here (popping the mode's last screen would stop the app)."""

    FILTERABLE = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading the store…", id="summary")
        if self.FILTERABLE:
            yield Input(placeholder="filter: text, level:level1, family:precision", id="filter", disabled=True)
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def on_screen_resume(self) -> None:
        if self.app.data is not None:
            self.populate(self.app.data)

    def populate(self, data: Overview) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class OverviewScreen(DataScreen):
    """Protocols × families: witnessed mutants and the share each protocol misses."""

    def populate(self, data: Overview) -> None:
        counts = self.app.store_view().status_counts()
        self.query_one("#summary", Static).update(
            "; ".join(data.score_words(p.name) + (f" ({_incomplete(data, p.name)})" if p.name in data.missing else "")
                      + (f" (witness search open: {counted(data.open_search[p.name]['mutants'], 'mutant')})"
                         if p.name in data.open_search else "")
                      for p in data.protocols) + ". "
            + "".join(f"{p} leaves out {counted(len(why), 'problem')} it cannot referee (kbm refcheck). "
                      for p, why in data.excluded.items())
            + ", ".join(f"{n:,} {s.replace('_', ' ')}" for s, n in sorted(counts.items())) + ". "
            + "False rejections: " + ", ".join(f"{p} {n}" for p, n in data.false_rejections.items())
            + (f". Mutants: {sample_words(data.sample)} ({data.sample['mutants']:,} of "
               f"{data.sample['distinct']:,} distinct)" if data.sample else "")
            + "".join(f". {p} {_incomplete(data, p)} (kbm audit -a {p} prints the kbm run that fills them)"
                      for p in data.missing))
        table = self.query_one(DataTable)
        table.clear(columns=True)
        # each protocol over its own denominator, as kbm audit scores it: the sizes differ by tolerance
        table.add_columns("family", *[f"{p.name} missed of witnessed" + (" (incomplete)" if p.name in data.missing
                                                                          else "") for p in data.protocols])
        table.add_rows([(f, *(_pct(pct, n) for n, pct in cells)) for f, cells in data.family_table()])


class PatternsScreen(DataScreen):
    """The kill matrix collapsed to "which protocols miss this mutant" patterns (UpSet form)."""

    def populate(self, data: Overview) -> None:
        self.patterns = data.patterns()
        self.query_one("#summary", Static).update(
            f"Each row: which protocols miss a mutant (● missed, · detected, – not witnessed at its tolerance), over "
            f"the {data.total:,} mutants some protocol's score is over; enter lists the mutants.")
        table = self.query_one(DataTable)
        table.clear(columns=True)
        table.add_columns(*[p.name for p in data.protocols], "mutants", "")
        largest = max((len(ids) for _, ids in self.patterns), default=1)
        for k, (pattern, ids) in enumerate(self.patterns):
            marks = [Text("–", style="dim") if missed is None else Text("●", style="red") if missed else Text("·")
                     for missed in pattern]
            table.add_row(*marks, f"{len(ids):,}", "█" * max(1, round(30 * len(ids) / largest)), key=str(k))

    @on(DataTable.RowSelected)
    def open_pattern(self, event: DataTable.RowSelected) -> None:
        pattern, ids = self.patterns[int(event.row_key.value)]
        data = self.app.data
        chosen, missed_by = set(ids), [p.name for p, miss in zip(data.protocols, pattern) if miss]
        rows = [{**data.matrices[k].mutants[m], "missed_by": missed_by}
                for k, w in data.witnessed.items() for m in sorted(w) if m in chosen]
        self.app.push_screen(MutantsScreen(rows, f"{len(rows)} mutants with this pattern"))


class ProblemsScreen(DataScreen):
    """Per-problem miss rate, sorted; `/` filters, `t` cycles the protocol."""

    BINDINGS = [Binding("slash", "filter", "Filter"), Binding("t", "next_protocol", "Protocol")]
    FILTERABLE = True
    protocol_index = 0
    level: str | None = None
    family: str | None = None
    text = ""

    def populate(self, data: Overview) -> None:
        protocol = data.protocols[self.protocol_index % len(data.protocols)].name
        rows = [r for r in data.problems(protocol, self.level, self.family) if self.text in r[0]]
        self.query_one("#summary", Static).update(
            f"{data.score_words(protocol)}: {len(rows)} problems, highest miss rate first"
            + (f" ({_incomplete(data, protocol)})" if protocol in data.missing else "")
            + "".join(f"; {k} {v}" for k, v in (("level", self.level), ("family", self.family)) if v))
        table = self.query_one(DataTable)
        table.clear(columns=True)
        table.add_columns("problem", "witnessed", "missed", "missed %")
        table.add_rows([(k, str(n), str(m), _pct(100.0 * m / n)) for k, n, m in rows])

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.disabled = False
        box.add_class("visible")
        box.focus()

    def action_next_protocol(self) -> None:
        self.protocol_index += 1
        self.on_screen_resume()

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        self.level = self.family = None
        self.text = ""
        for word in event.value.split():
            if word.startswith("level:"):
                self.level = word.split(":", 1)[1]
            elif word.startswith("family:"):
                self.family = word.split(":", 1)[1]
            else:
                self.text = word
        self.query_one(DataTable).focus()
        self.on_screen_resume()

    @on(DataTable.RowSelected)
    def open_problem(self, event: DataTable.RowSelected) -> None:
        key = str(self.query_one(DataTable).get_row(event.row_key)[0])
        self.app.push_screen(MutantsScreen(self.app.data.mutants_of(key), f"witnessed mutants of {key}"))


class MutantsScreen(Screen):
    """A list of mutants; enter opens one."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, rows: list[dict[str, Any]], title: str) -> None:
        super().__init__()
        self.rows, self.heading = rows, title

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.heading, id="summary")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("mutant", "family", "rule", "missed by")
        table.add_rows([(r["id"], r["family"], r["name"].split(" ", 2)[-1], ", ".join(r["missed_by"]) or "-")
                        for r in self.rows])

    @on(DataTable.RowSelected)
    def open_mutant(self, event: DataTable.RowSelected) -> None:
        self.app.push_screen(MutantScreen(str(self.query_one(DataTable).get_row(event.row_key)[0])))


class MutantScreen(Screen):
    """One mutant: rule, description, diff, and every input it met with each protocol's verdict."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, mutant_id: str) -> None:
        super().__init__()
        self.mutant_id = mutant_id

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading…", id="rule")
        yield Static(id="diff")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        detail = mutant_detail(self.app.store_view(), self.mutant_id, self.app.protocols)
        self.app.call_from_thread(self.show, detail)

    def show(self, detail: dict[str, Any]) -> None:
        m, rule = detail["mutant"], detail["rule"] or {}
        self.query_one("#rule", Static).update(
            f"[b]{m['name']}[/b]\n{m['family']} · {rule.get('description', '')} · status {m['status']}")
        self.query_one("#diff", Static).update(Syntax(m["diff"] or "", "diff", theme="ansi_dark"))
        table = self.query_one(DataTable)
        table.add_columns("input", "outcome", "margin", "correct margin", *[p.name for p in self.app.protocols])
        for r in detail["inputs"]:
            margin = "inf" if r["margin"] is None else f"{r['margin']:.2e}"
            correct = "-" if r["correct_margin"] is None else f"{r['correct_margin']:.1e}"
            table.add_row(r["label"], r["outcome"], margin, correct, *[r["verdicts"][p.name] for p in self.app.protocols])


class SubmissionsScreen(Screen):
    """The submissions `kbm verify` judged: a row each, a column a protocol; enter opens one."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading the submissions…", id="summary")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        verdicts = submission_verdicts(self.app.store_view(), self.app.protocols)
        self.app.call_from_thread(self.show, verdicts)

    def show(self, verdicts: list[SubmissionVerdicts]) -> None:
        self.verdicts = verdicts
        counts = verdict_counts(verdicts)
        self.query_one("#summary", Static).update(
            f"{len(verdicts):,} submissions judged by kbm verify; "
            + "; ".join(f"{p}: " + ", ".join(f"{n:,} {w}" for w, n in sorted(c.items())) for p, c in counts.items())
            if verdicts else "No submissions in this store: kbm verify judges some.")
        table = self.query_one(DataTable)
        table.clear(columns=True)
        table.add_columns("problem", "submission", *[p.name for p in self.app.protocols])
        for k, v in enumerate(verdicts):
            s = v.submission
            table.add_row(s["problem"], s["name"], *[_verdict(v.verdict(p.name)) for p in self.app.protocols],
                          key=str(k))

    @on(DataTable.RowSelected)
    def open_submission(self, event: DataTable.RowSelected) -> None:
        self.app.push_screen(SubmissionScreen(self.verdicts[int(event.row_key.value)]))


def _verdict(word: str) -> Text:
    return Text(word, style={"accepts": "green", "rejects": "red"}.get(word, "yellow"))


class SubmissionScreen(Screen):
    """One submission: every input of every protocol, its result and margin."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, verdicts: SubmissionVerdicts) -> None:
        super().__init__()
        self.verdicts = verdicts

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="summary")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        s = self.verdicts.submission
        words = f"{s['status'].replace('_', ' ')}: {s['note']}" if s["note"] else s["status"]
        self.query_one("#summary", Static).update(f"[b]{s['path']}[/b]\n{s['problem']} · {words}")
        table = self.query_one(DataTable)
        table.add_columns("protocol", "verdict", "input", "result", "margin", "note")
        for pv in self.verdicts.protocols:
            table.add_row(pv.protocol, _verdict(pv.verdict), "", "", "", "")
            for r in pv.inputs:
                margin = "-" if r.margin is None else f"{r.margin:.2e}"
                table.add_row("", "", r.label, r.words, margin, r.note or "")


class KbmApp(App):
    """Browse what a store knows: read-only, keyboard-first."""

    CSS_PATH = "app.tcss"
    TITLE = "kbm"
    MODES = {"overview": OverviewScreen, "patterns": PatternsScreen, "problems": ProblemsScreen,
             "submissions": SubmissionsScreen}
    DEFAULT_MODE = "overview"
    BINDINGS = [Binding("o", "switch_mode('overview')", "Overview"),
                Binding("p", "switch_mode('patterns')", "Patterns"),
                Binding("r", "switch_mode('problems')", "Problems"),
                Binding("s", "switch_mode('submissions')", "Submissions"),
                Binding("q", "quit", "Quit")]

    def __init__(self, store_path: Path, protocols: list[Protocol], accounting: Accounting = Accounting.TOLERANCE,
                 denominator: list[Protocol] | None = None) -> None:
        super().__init__()
        self.store_path = store_path
        self.protocols = protocols
        self.accounting = accounting
        self.denominator = denominator
        self.data: Overview | None = None
        self.sub_title = store_path.name

    def store_view(self) -> Store:
        """A read-only store for the calling thread (SQLite connections stay in one thread)."""
        return Store(self.store_path, readonly=True)

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="load")
    def load(self) -> None:
        data = overview(self.store_view(), self.protocols, self.accounting, self.denominator)
        self.call_from_thread(self.loaded, data)

    def loaded(self, data: Overview) -> None:
        self.data = data
        if isinstance(self.screen, DataScreen):
            self.screen.populate(data)
