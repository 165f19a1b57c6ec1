"""The README's promises: its first commands, and every Python block of it and of the
pages of ``docs/``, run as written.

The Quickstart runs alone, twice in a row (it keeps nothing between runs). The README's
block that starts with ``# Setup shared by the examples below`` runs before each later
block (the docs pages' too), in a fresh esper state, with the Anthropic SDK pointed at
the local fake Messages API.
A line ending in ``# prints: TEXT`` must print exactly TEXT. The PostgreSQL example needs
a server: tests/test_postgres.py runs it as written against a fresh database.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest

from .conftest import reset_esper
from .fake_anthropic import FakeMessagesAPI

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DEMO_README = (ROOT / "demo" / "README.md").read_text()
TEST_COMMAND = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && pytest"
SETUP_MARK = "# Setup shared by the examples below"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """Each Python block with the line it starts on."""
    return [
        (text[: m.start()].count("\n") + 2, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
    ]


DOCS = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}
BLOCKS = python_blocks(README)
QUICKSTART = next((line, code) for line, code in BLOCKS if "## Quickstart" in README.split(code)[0][-40:])
SETUP = next(code for _, code in BLOCKS if code.startswith(SETUP_MARK))
ALL_BLOCKS = [(f"README.md:{line}", code) for line, code in BLOCKS] + [
    (f"docs/{name}:{line}", code) for name, text in DOCS.items() for line, code in python_blocks(text)
]
SERVER_BLOCKS = [code for _, code in ALL_BLOCKS if "NPC_MEMORY_TEST_PG" in code]
EXAMPLES = [
    (where, code)
    for where, code in ALL_BLOCKS
    if code is not SETUP and code is not QUICKSTART[1] and code not in SERVER_BLOCKS
]
PRINTS = re.compile(r"#\s*prints:\s?(.*)$")


def test_first_lines_give_the_demo_and_test_commands() -> None:
    head = README.splitlines()[:10]
    assert any("npc-memory demo" in line and "pip install" in line for line in head)
    assert any(line.strip() == TEST_COMMAND for line in head)


def test_the_first_command_installs_the_demo_extra_and_runs_both_scenarios() -> None:
    first = next(line for line in README.splitlines()[:10] if "npc-memory demo" in line)
    assert "pip install '.[demo]'" in first
    assert "npc-memory demo &&" in first and first.rstrip().endswith("npc-memory demo town")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TEST_COMMAND in ci


def test_every_python_block_is_run_here() -> None:
    assert len(ALL_BLOCKS) >= 13 and len(DOCS) >= 10
    assert len(SERVER_BLOCKS) == 1  # run by tests/test_postgres.py
    assert len(EXAMPLES) == len(ALL_BLOCKS) - 3  # the Quickstart, the setup, the server's, and each example


def test_the_readme_is_a_guide_and_links_every_page() -> None:
    assert len(README.splitlines()) <= 500
    assert len((ROOT / "benchmarks" / "README.md").read_text().splitlines()) <= 300  # one table a benchmark
    for name in DOCS:
        assert f"(docs/{name})" in README, f"the README does not link docs/{name}"
    for name, text in DOCS.items():  # every relative link of a page leads to a file
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (ROOT / "docs" / target).resolve().exists(), f"docs/{name} links {target}"


def expected_prints(code: str) -> list[str]:
    return [match.group(1).rstrip() for line in code.splitlines() if (match := PRINTS.search(line))]


def run_block(code: str, name: str, namespace: dict[str, object]) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), namespace)
    return out.getvalue().splitlines()


@pytest.fixture
def fake_claude(
    api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> FakeMessagesAPI:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-anthropic-config"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # anything a block writes by a relative path lands here
    (tmp_path / "temp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))  # its tempfile.mkdtemp() stores here
    return api


def test_quickstart_runs_as_written_and_again(fake_claude: FakeMessagesAPI) -> None:
    line, code = QUICKSTART
    assert len(code.strip().splitlines()) <= 34  # a quick start stays short
    for _ in range(2):  # a second run starts afresh: nothing is left over from the first
        reset_esper()
        printed = run_block(code, f"README.md:{line} (Quickstart)", {"__name__": "quickstart"})
        assert printed == expected_prints(code)


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_each_example_runs_after_the_setup(fake_claude: FakeMessagesAPI, where: str, code: str) -> None:
    for _ in range(2):  # twice: a second run is not disturbed by the first
        reset_esper()
        namespace: dict[str, object] = {"__name__": "readme"}
        run_block(SETUP, "README.md (setup)", namespace)
        printed = run_block(code, where, namespace)
        assert printed == expected_prints(code)
    assert not list(Path.cwd().iterdir()), "an example wrote into the working directory"


@pytest.mark.parametrize(
    ("line", "code"), python_blocks(DEMO_README), ids=[f"demo/README.md:{n}" for n, _ in python_blocks(DEMO_README)]
)
def test_the_demo_readme_blocks_run_alone(fake_claude: FakeMessagesAPI, line: int, code: str) -> None:
    for _ in range(2):
        reset_esper()
        printed = run_block(code, f"demo/README.md:{line}", {"__name__": "demo_readme"})
        assert printed == expected_prints(code)


def test_the_demo_readme_shows_a_picture_from_the_report() -> None:
    pictures = re.findall(r"!\[[^\]]+\]\(([^)]+\.png)\)", DEMO_README)
    assert pictures
    for picture in pictures:
        data = (ROOT / "demo" / picture).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    assert "How to read it" in DEMO_README
