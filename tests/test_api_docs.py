"""The Python API as docs/api.md shows it: every `python` block runs, in order, in one fresh
interpreter, and prints exactly the `output` block that follows it. Also, `kbm_toolkit`'s public
names all resolve, and `import kbm_toolkit` stays cheap (no torch, no CUDA, no Textual)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import kbm_toolkit

from support import REPO

API_DOC = REPO / "docs" / "api.md"
HEAVY = ("torch", "cuda", "textual")
"""Packages that `import kbm_toolkit` and the examples must not load."""

LOADS_TORCH = {"check_substrate", "judge_problems"}
"""Public names whose module imports torch when the name is first used (the static check and
`kbm equivalence` run launchers on torch's meta device). Every other name loads none of HEAVY."""

GPU_ENTRY_POINTS = ("fill_matrix", "RunRequest", "gate_problems")
"""Names exported from `kbm_toolkit.evaluation`, whose modules are being reorganised: they must keep resolving."""


@dataclass
class Block:
    """One `python` block of a Markdown page, and the `output` block right after it, if any."""

    line: int
    """The line of the page where the code starts (after the opening fence)."""
    code: str
    expected: str | None


_FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def parse(text: str) -> list[Block]:
    """The page's python blocks. An `output` block belongs to the python block just before it (with
    nothing but blank lines between them); one anywhere else is an error in the page."""
    blocks: list[Block] = []
    previous_end, previous_python = 0, False
    for m in _FENCE.finditer(text):
        language, body = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 2
        if language == "output":
            if not previous_python or text[previous_end:m.start()].strip():
                raise ValueError(f"line {line - 1}: an output block must follow a python block directly")
            blocks[-1].expected = body
        elif language == "python":
            blocks.append(Block(line, body, None))
        previous_end, previous_python = m.end(), language == "python"
    return blocks


# Runs in a fresh interpreter: reads the blocks (JSON) from stdin, writes the results to argv[1].
# Each block is compiled at its own line of the page, so a traceback points into docs/api.md.
_DRIVER = r"""
import contextlib, io, json, sys, traceback
page, blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
results = []
for block in blocks:
    out = io.StringIO()
    error = None
    with contextlib.redirect_stdout(out):
        try:
            exec(compile("\n" * (block["line"] - 1) + block["code"], page, "exec"), namespace)
        except BaseException:
            error = traceback.format_exc()
    results.append({"output": out.getvalue(), "error": error})
    if error:
        break
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "cuda", "textual"))
with open(sys.argv[1], "w") as f:
    json.dump({"results": results, "heavy": heavy}, f)
"""


def run_blocks(page: Path, blocks: list[Block], cwd: Path) -> dict:
    """Run `blocks` in order in one namespace of a fresh interpreter started in `cwd`: per block its
    printed output and its traceback, if it raised (the blocks after it do not run); and which of
    HEAVY's packages were loaded by the end."""
    results = cwd / "results.json"
    payload = json.dumps([str(page), [{"line": b.line, "code": b.code} for b in blocks]])
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(results)], input=payload, capture_output=True,
                          text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(results.read_text())


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []


def mismatch(block: Block, result: dict | None) -> str | None:
    """What is wrong with one block's run, in words; None when it printed what the page says."""
    if result is None:
        return f"line {block.line}: not run, an earlier block raised"
    if result["error"]:
        return f"line {block.line} raised:\n{result['error']}"
    printed = _lines(result["output"])
    if block.expected is None:
        return f"line {block.line} prints, but no output block follows it:\n{result['output']}" if printed else None
    if printed != _lines(block.expected):
        return (f"line {block.line}: the output block is stale.\n--- the page says\n{block.expected}"
                f"--- the code prints\n{result['output']}")
    return None


BLOCKS = parse(API_DOC.read_text())


@pytest.fixture(scope="module")
def doc_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """docs/api.md's blocks, run once for every test here (in a scratch folder: the examples write files)."""
    return run_blocks(API_DOC, BLOCKS, tmp_path_factory.mktemp("api-doc"))


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"line {b.line}" for b in BLOCKS])
def test_api_doc_block_prints_its_output_block(doc_run: dict, index: int) -> None:
    results = doc_run["results"]
    problem = mismatch(BLOCKS[index], results[index] if index < len(results) else None)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_api_doc_examples_need_no_torch_cuda_or_textual(doc_run: dict) -> None:
    assert len(doc_run["results"]) == len(BLOCKS)
    assert doc_run["heavy"] == []


def test_api_doc_has_examples_with_output() -> None:
    assert len(BLOCKS) >= 10 and sum(b.expected is not None for b in BLOCKS) >= 10


def test_api_doc_links_name_cli_sections() -> None:
    """Each section links to its CLI command (docs/cli.md, generated from --help), and every such
    link names a heading of that page."""
    page = API_DOC.read_text()
    headings = re.findall(r"^#+ (.+)$", (REPO / "docs" / "cli.md").read_text(), re.M)
    anchors = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
    links = re.findall(r"\]\(cli\.md#([\w-]+)\)", page)
    assert links and set(links) <= anchors, sorted(set(links) - anchors)
    sections = {s.splitlines()[0]: s for s in re.split(r"^## ", page, flags=re.M)[1:]}
    assert [title for title, text in sections.items() if "](cli.md#" not in text] == ["Every public name"]


# The harness itself: a stale page must fail.

def test_a_stale_output_block_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 6 * 7\nprint(x)\n```\n\n```output\n41\n```\n\n```python\nprint(x + 1)\n```\n")
    blocks = parse(page.read_text())
    assert [(b.line, b.expected) for b in blocks] == [(2, "41\n"), (11, None)]
    run = run_blocks(page, blocks, tmp_path)
    assert [r["output"] for r in run["results"]] == ["42\n", "43\n"]  # one namespace: `x` carries over
    assert "stale" in mismatch(blocks[0], run["results"][0])
    assert "no output block" in mismatch(blocks[1], run["results"][1])
    blocks[0].expected = "42\n"
    assert mismatch(blocks[0], run["results"][0]) is None


def test_a_block_that_raises_is_caught_at_its_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n```python\nimport kbm_toolkit\nkbm_toolkit.open_shipped('nope')\n```\n\n"
                    "```python\nprint(1)\n```\n```output\n1\n```\n")
    blocks = parse(page.read_text())
    run = run_blocks(page, blocks, tmp_path)
    assert len(run["results"]) == 1
    problem = mismatch(blocks[0], run["results"][0])
    assert f'File "{page}", line 5' in problem and "StoreError: no shipped store @nope" in problem
    assert mismatch(blocks[1], None) == "line 9: not run, an earlier block raised"


@pytest.mark.parametrize("page", [
    "```output\n1\n```\n",                                          # no python block before it
    "```python\nprint(1)\n```\nSome words.\n```output\n1\n```\n",   # prose between them
    "```python\nprint(1)\n```\n```output\n1\n```\n```output\n1\n```\n",  # two for one block
    "```bash\nkbm audit\n```\n```output\n1\n```\n",                 # after a block that is not python
])
def test_an_output_block_without_its_python_block_is_refused(page: str) -> None:
    with pytest.raises(ValueError, match="must follow a python block"):
        parse(page)


# The public API.

@pytest.mark.parametrize("name", kbm_toolkit.__all__)
def test_every_public_name_resolves_to_where_it_is_defined(name: str) -> None:
    value = getattr(kbm_toolkit, name)
    module = kbm_toolkit._MODULE_OF[name]
    assert value is getattr(sys.modules[module], name)
    if hasattr(value, "__module__") and not isinstance(value, (dict, tuple, str)):
        assert value.__module__ == module  # the defining module: using the name imports no more than it needs


def test_the_gpu_entry_points_resolve() -> None:
    for name in GPU_ENTRY_POINTS:
        assert name in kbm_toolkit.__all__ and callable(getattr(kbm_toolkit, name)), name


def test_every_public_name_is_listed_in_the_api_doc() -> None:
    page = API_DOC.read_text()
    table = page[page.index("## Every public name"):]
    assert [n for n in kbm_toolkit.__all__ if f"`{n}`" not in table] == []


def test_dir_lists_the_public_names_and_an_unknown_one_is_named() -> None:
    assert set(kbm_toolkit.__all__) <= set(dir(kbm_toolkit))
    assert "__version__" in dir(kbm_toolkit)
    assert len(kbm_toolkit.__all__) == len(set(kbm_toolkit.__all__))
    with pytest.raises(AttributeError, match="module 'kbm_toolkit' has no attribute 'audit_stor'"):
        kbm_toolkit.audit_stor  # noqa: B018


def _fresh(code: str) -> list[str]:
    """What running `code` in a fresh interpreter loads of HEAVY's packages and of kbm's own modules."""
    report = (f"heavy = {HEAVY!r}\n"
              "print(*sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('kbm_toolkit.')))")
    done = subprocess.run([sys.executable, "-c", f"import sys\n{code}\n{report}"], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


def test_import_kbm_toolkit_loads_no_submodule() -> None:
    assert _fresh("import kbm_toolkit") == []


def test_using_audit_store_loads_no_torch_cuda_or_textual() -> None:
    loaded = _fresh("import kbm_toolkit\nkbm_toolkit.audit_store")
    assert "kbm_toolkit.analysis.score" in loaded
    assert [m for m in loaded if not m.startswith("kbm_toolkit.")] == []


def test_every_light_name_loads_no_torch_cuda_or_textual() -> None:
    light = [n for n in kbm_toolkit.__all__ if n not in LOADS_TORCH]
    loaded = _fresh(f"import kbm_toolkit\nfor name in {light!r}:\n    getattr(kbm_toolkit, name)")
    assert [m for m in loaded if not m.startswith("kbm_toolkit.")] == []


@pytest.mark.parametrize("name", sorted(LOADS_TORCH))
def test_the_names_said_to_load_torch_do(name: str) -> None:
    # keeps LOADS_TORCH honest: a name that stops loading torch belongs with the light ones
    assert "torch" in _fresh(f"import kbm_toolkit\nkbm_toolkit.{name}")
