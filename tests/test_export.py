"""The Stryker (mutation-testing-elements) export, validated against the published schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.report.stryker import stryker_report
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import substrate_for

from support import build

SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "mutation-testing-report-schema.json"
KB = load_protocol("kernelbench")


def test_statuses_follow_the_documented_mapping(tmp_path: Path, demo: ProblemSet) -> None:
    store, ids = build(tmp_path / "s.db", demo)
    report = stryker_report(store, KB, [KB])
    (kernel,) = [f for name, f in report["files"].items() if name.endswith("kernel.cu")]
    status = {m["mutatorName"]: m["status"] for m in kernel["mutants"]}
    assert status == {"breaks-compile": "CompileError", "commutes": "Ignored", "slope-div": "Killed",
                      "slope-div-again": "Ignored"}
    killed = next(m for m in kernel["mutants"] if m["status"] == "Killed")
    assert killed["killedBy"] == ["official trial 0"]
    assert kernel["source"] == substrate_for(demo.get("demo/1")).source
    start, end = killed["location"]["start"], killed["location"]["end"]
    line = kernel["source"].splitlines()[start["line"] - 1]
    assert line[start["column"] - 1:end["column"] - 1] == "v * negative_slope"


@pytest.mark.skipif(not SCHEMA.is_file(), reason=f"needs the schema at {SCHEMA}")
def test_the_report_validates_against_the_published_schema(tmp_path: Path, demo: ProblemSet) -> None:
    import jsonschema

    build(tmp_path / "s.db", demo)[0].close()
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "export", "--format", "stryker",
                                      "--adapter", "kernelbench", "--out", str(out)])
    assert result.exit_code == 0, result.output
    jsonschema.validate(json.loads(out.read_text()), json.loads(SCHEMA.read_text()))


def test_mutants_of_a_changed_substrate_are_left_out_and_counted(tmp_path: Path, demo: ProblemSet) -> None:
    store, ids = build(tmp_path / "s.db", demo)
    total = store.db["mutants"].count
    store.db.execute("update mutants set substrate_hash = 'an older one' where id = ?", [ids["commutes"]])
    store.db.conn.commit()
    store.close()
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "export", "--out", str(out)])
    assert result.exit_code == 0, result.output
    exported = [m["id"] for f in json.loads(out.read_text())["files"].values() for m in f["mutants"]]
    assert len(exported) == total - 1 and ids["commutes"] not in exported
    assert f"wrote {out}: {total - 1} mutants" in result.stdout
    assert "left out 1 mutants made from a substrate that has changed" in result.stderr
