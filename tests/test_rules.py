"""Every rule fires on its fixture at the expected number of sites, and every mutant compiles."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.errors import KbmError
from kbm_toolkit.mutation.rules import FAMILIES, RuleError, load_rules

from support import FIXTURES

RULES = load_rules()
RULE_FIXTURES = FIXTURES / "rules"


def _fixture(rule) -> Path:
    return RULE_FIXTURES / (rule.name + (".py" if rule.target == "launcher" else ".cu"))


def _expected(text: str) -> int:
    m = re.search(r"^(?://|#) expect: (\d+)$", text, re.M)
    assert m, "a rule fixture starts with '// expect: N' (or '# expect: N' for launch.py)"
    return int(m.group(1))


def test_every_rule_has_a_fixture() -> None:
    missing = [r.name for r in RULES if not _fixture(r).is_file()]
    assert not missing, f"rules without a fixture in {RULE_FIXTURES}: {missing}"


def test_every_fixture_belongs_to_a_rule() -> None:
    names = {r.name for r in RULES}
    orphans = [p.name for p in RULE_FIXTURES.iterdir() if p.stem not in names]
    assert not orphans


def test_families_are_the_six_of_the_taxonomy() -> None:
    # the paper's six, each with a rule; the parser refuses any other family, so a subset check could not fail
    six = {"arithmetic", "indexing", "semantic", "boundary", "synchronization", "precision"}
    assert set(FAMILIES) == six and {r.family for r in RULES} == six


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule_fires_on_its_fixture_and_mutants_compile(rule) -> None:
    text = _fixture(rule).read_text()
    sites = list(rule.sites(text))
    assert len(sites) == _expected(text), [(s.line, s.original) for s in sites]
    for site in sites:
        mutated = rule.apply(text, site)
        assert mutated != text
        if rule.target == "launcher":
            compile(mutated, "launch.py", "exec")
        else:
            compile_source(mutated, "sm_90", where=f"{rule.name} at line {site.line}")


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_fixture_itself_compiles(rule) -> None:
    text = _fixture(rule).read_text()
    if rule.target == "launcher":
        compile(text, "launch.py", "exec")
    else:
        compile_source(text, "sm_90", where=str(_fixture(rule)))


def test_rule_names_are_unique_across_files() -> None:
    assert not [n for n, c in Counter(r.name for r in RULES).items() if c > 1]


BAD = {
    "not_toml": ("[[rule]\nname = 1", "not valid TOML"),
    "missing_pattern": ('[[rule]]\nname = "x"\nfamily = "arithmetic"\ndescription = "d"\nreplacement = ""\n',
                        "rule 'x': missing or non-string key 'pattern'"),
    "bad_family": ('[[rule]]\nname = "x"\nfamily = "numeric"\ndescription = "d"\npattern = "a"\nreplacement = "b"\n',
                   "rule 'x': family must be one of"),
    "bad_regex": ('[[rule]]\nname = "x"\nfamily = "arithmetic"\ndescription = "d"\npattern = "(a"\nreplacement = "b"\n',
                  "rule 'x': pattern is not a valid regular expression"),
    "bad_group": ('[[rule]]\nname = "x"\nfamily = "arithmetic"\ndescription = "d"\npattern = "(a)"\nreplacement = "\\\\2"\n',
                  "rule 'x': replacement refers to a group the pattern lacks"),
    "unknown_key": ('[[rule]]\nname = "x"\nfamily = "arithmetic"\ndescription = "d"\npattern = "a"\nreplacement = "b"\nwhen = "loop"\n',
                    "rule 'x': unknown key 'when'"),
    "bad_guard": ('[[rule]]\nname = "x"\nfamily = "arithmetic"\ndescription = "d"\npattern = "a"\nreplacement = "b"\n[rule.guard]\ninside = "kernel"\n',
                  "rule 'x': guard inside must be one of"),
    "bad_fixup": ('[[rule]]\nname = "x"\nfamily = "precision"\ndescription = "d"\npattern = "a"\nreplacement = "b"\nfixup = "include-bf16"\n',
                  "rule 'x': unknown fixup 'include-bf16'"),
    "bad_name": ('[[rule]]\nname = "Plus To Minus"\nfamily = "arithmetic"\ndescription = "d"\npattern = "a"\nreplacement = "b"\n',
                 "name must be lower-case words"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_rule_files_name_file_rule_and_reason(tmp_path: Path, case: str) -> None:
    text, words = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    with pytest.raises(KbmError) as e:  # typed, so the CLI words it as one line
        load_rules([path])
    assert str(path) in str(e.value) and words in str(e.value)


def test_duplicate_names_across_files_are_refused(tmp_path: Path) -> None:
    rule = '[[rule]]\nname = "x"\nfamily = "arithmetic"\ndescription = "d"\npattern = "a"\nreplacement = "b"\n'
    (tmp_path / "a.toml").write_text(rule)
    (tmp_path / "b.toml").write_text(rule)
    with pytest.raises(RuleError, match="name already used"):
        load_rules([tmp_path / "a.toml", tmp_path / "b.toml"])


def test_guards_restrict_sites() -> None:
    from kbm_toolkit.mutation.rules import _parse

    text = "for (int i = 0; i < n; i++) { if (i < m) x[i] = 0; }\n"

    loop = _parse({"name": "t", "family": "boundary", "description": "d", "pattern": r"<",
                   "replacement": "<=", "guard": {"inside": "loop-header"}}, Path("t.toml"), 0)
    cond = _parse({"name": "t", "family": "boundary", "description": "d", "pattern": r"<",
                   "replacement": "<=", "guard": {"inside": "condition"}}, Path("t.toml"), 0)
    assert [s.col for s in loop.sites(text)] == [19]
    assert [s.col for s in cond.sites(text)] == [37]


PAPER = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "000_3805da9392136fab.txt"


def _appendix_b() -> dict[str, str]:
    """Rule name → family, read from the paper's Table 7 (Appendix B)."""
    text = PAPER.read_text()
    table = text[text.index("Appendix B Mutation-rule inventory"):text.index("Appendix C")]
    families, family = {}, None
    for line in table.splitlines():
        heading = re.match(r"^(Arithmetic|Indexing|Semantic|Boundary|Synchronization|Precision) \(\d+ rules\)", line)
        if heading:
            family = heading.group(1).lower()
            continue
        m = re.match(r"^([a-z0-9][a-z0-9-]*[a-z0-9])\t", line)
        if m and family:
            families[m.group(1)] = family
    return families


@pytest.mark.skipif(not PAPER.is_file(), reason=f"needs the paper at {PAPER}")
def test_every_appendix_b_rule_is_implemented_in_its_family() -> None:
    paper = _appendix_b()
    ours = {r.name: r for r in RULES}
    assert len(paper) == 120
    assert sorted(set(paper) - set(ours)) == []
    assert {name: ours[name].family for name in paper} == paper
    assert all(ours[name].origin == "appendix-b" for name in paper)
    assert all(r.origin in ("appendix-a", "mutgpu") for r in RULES if r.name not in paper)
