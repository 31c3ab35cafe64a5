"""The README tells the truth: its example is the command's output, its commands are CI's, and
every setting it names exists."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from bot.config.schema import Config

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
EXAMPLE_COMMAND = "$ .venv/bin/python -m bot replay --no-model examples/support-channel.json"


def example_block() -> list[str]:
    start = README.index(EXAMPLE_COMMAND)
    return README[start : README.index("```", start)].splitlines()[1:]


def matches(shown: list[str], output: list[str]) -> str | None:
    """None when every shown line is in the output, in order. A line starting with ``…`` skips
    output lines; a line ending with `` …`` is a prefix of its output line."""
    position, skipping = 0, False
    for line in shown:
        if line.startswith("…"):
            skipping = True
            continue
        prefix = line.endswith(" …")
        wanted = line[:-1] if prefix else line

        def fits(candidate: str, wanted: str = wanted, prefix: bool = prefix) -> bool:
            return candidate.startswith(wanted) if prefix else candidate == wanted

        while position < len(output) and not fits(output[position]):
            if not skipping:
                return f"README line {line!r} is not the output's {output[position]!r}"
            position += 1
        if position == len(output):
            return f"README line {line!r} is not in the output"
        position += 1
        skipping = False
    return None


def test_the_readme_example_is_the_commands_real_output():
    result = subprocess.run(
        EXAMPLE_COMMAND.removeprefix("$ ").replace(".venv/bin/python", sys.executable).split(),
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    problem = matches(example_block(), result.stdout.splitlines())
    assert problem is None, f"{problem}; regenerate the README example from `{EXAMPLE_COMMAND[2:]}`"


def test_the_example_check_can_fail():
    output = ["a", "b", "c", "d"]
    assert matches(["a", "…", "d"], output) is None
    assert matches(["a", "b …"], ["a", "b c"]) is None
    assert matches(["a", "c"], output) is not None
    assert matches(["a", "…", "e"], output) is not None


def ci_shell(snippet: str, path: str | None = None) -> str:
    """Run ``snippet`` with .ci/run's helper functions defined (not the whole CI)."""
    functions = re.findall(r"^(\w+\(\) \{\n.*?\n\})", (ROOT / ".ci/run").read_text(), re.M | re.S)
    script = "\n".join(functions) + "\n" + snippet
    env = {"PATH": path or os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    result = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_ci_runs_exactly_the_readmes_commands():
    tests = ci_shell("readme_command tests")
    quick = ci_shell("readme_command quick-start")
    assert tests.strip() == (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
        ".venv/bin/python -m pytest"
    )
    assert quick.strip().endswith(
        ".venv/bin/python -m bot replay --no-model examples/support-channel.json"
    )
    assert f"```sh\n{tests}```" in README and f"```sh\n{quick}```" in README
    same = ci_shell('for_interpreter "$(readme_command tests)" python3 .venv')
    assert same == tests.strip()  # the default interpreter runs it unchanged
    other = ci_shell('for_interpreter "$(readme_command tests)" /opt/py/bin/python3 .venv312')
    assert other == (
        "/opt/py/bin/python3 -m venv .venv312 && .venv312/bin/pip install -q -e '.[test]' && "
        ".venv312/bin/python -m pytest"
    )


def test_ci_says_what_failed_again_at_the_end(tmp_path):
    """CI's record shows only the end of its output: a failure early on (the first interpreter's
    suite) must be said again there, with the end of that step's output, without pip's notes."""
    (tmp_path / "suite").write_text(
        "echo \"WARNING: Location 'file:///opt/x/' is ignored: it is neither a file nor a "
        'directory."\necho "FAILED tests/test_x.py::test_y"\necho "1 failed, 9 passed"\nexit 1\n'
    )
    out = ci_shell(
        "LOGS=$(mktemp -d); steps=0; status=0; failures=(); failed_logs=()\n"
        f'run_step "first suite" 10 "bash {tmp_path / "suite"}"\n'
        'run_step "second suite" 10 "echo 10 passed"\n'
        'echo "--- the end"; say_failures_again; rm -rf "$LOGS"'
    )
    assert out.split("--- the end\n", 1)[1].splitlines() == [
        "=== the end of the output of: first suite",
        "FAILED tests/test_x.py::test_y",
        "1 failed, 9 passed",
        "=== failures:",
        "  first suite: exit 1",
    ]


def test_every_setting_the_readme_and_docs_name_exists():
    pages = {"README.md": README} | {
        f"docs/{page.name}": page.read_text() for page in sorted(DOCS.glob("*.md"))
    }
    for name, text in pages.items():
        for section, key in re.findall(r"`\[(\w+)\] (\w+)", text):
            assert section in Config.model_fields, f"{name} names [{section}], not a section"
            model = Config.model_fields[section].annotation
            assert key in model.model_fields, f"{name} names [{section}] {key}, not a setting"
    assert re.search(r"`\[(\w+)\] (\w+)", README), "the README names settings as `[section] key`"


def test_ci_fails_when_pyenv_has_no_working_python_312(tmp_path):
    """A listed version that does not run does not count, and "none" is a failure, not a skip."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pyenv").write_text(
        "#!/bin/sh\n"
        f'case "$1" in root) echo {tmp_path};; versions) printf "3.11.7\\n3.12.99\\n";; esac\n'
    )
    (fake / "pyenv").chmod(0o755)
    out = ci_shell(
        'find_python312; echo "found=$? python=$python312"', path=f"{fake}:/usr/bin:/bin"
    )
    assert "found=2 python=" in out and "no working Python >= 3.12" in out
    (tmp_path / "versions" / "3.12.99" / "bin").mkdir(parents=True)
    (tmp_path / "versions" / "3.12.99" / "bin" / "python3").symlink_to(sys.executable)
    out = ci_shell("find_python312; echo found=$?", path=f"{fake}:/usr/bin:/bin")
    assert "found=0" in out


def test_the_contexts_rows_keys_are_the_ones_it_prints():
    commands = (DOCS / "commands.md").read_text().splitlines()
    row = next(line for line in commands if line.startswith("| `python -m bot contexts"))
    named = re.search(r"`\{(.*?)\}`", row)
    assert named, row
    result = subprocess.run(
        [sys.executable, "-m", "bot", "contexts", "examples/support-channel.json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = set(json.loads(result.stdout.splitlines()[0]))
    assert set(re.findall(r'"(\w+)"', named[1])) == printed


def test_the_tools_examples_stdio_servers_can_run_in_the_image():
    """The image has Python and the bot only (no uv, no Node): each ``command`` of the tools
    page's ``[[tools.mcp]]`` examples is ``python``, or a venv's python that a Dockerfile on that
    page creates."""
    import tomllib

    tools = (DOCS / "tools.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", tools, re.S)
    dockerfiles = "\n".join(re.findall(r"```dockerfile\n(.*?)```", tools, re.S))
    venvs = set(re.findall(r"python -m venv (\S+)", dockerfiles))
    commands = [
        server["command"]
        for block in blocks
        if "[[tools.mcp]]" in block
        for server in tomllib.loads(block)["tools"]["mcp"]
        if "command" in server
    ]
    assert commands, "the Tools section shows a command server"
    for command in commands:
        assert command == "python" or any(command == f"{venv}/bin/python" for venv in venvs), (
            f"{command!r} is not in the Docker image: say how to add it"
        )


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings (code blocks hold no headings)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    headings = re.findall(r"^#+ (.+)$", prose, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_every_link_of_the_readme_and_docs_leads_somewhere():
    """The README is a front page over docs/: a link to a page or a section that moved away is a
    dead end for the reader, so each relative link names a file that exists, and a heading of it
    when it names one."""
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    checked = 0
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"\w+://", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.name} links to {target}, which is not there"
            if anchor and linked.suffix == ".md":
                assert anchor in anchors(linked.read_text()), f"{page.name}: no #{anchor} there"
            checked += 1
    assert checked > 20


def test_the_readme_stays_a_front_page_and_each_docs_page_says_what_it_covers():
    """Read in minutes: the README keeps to about 300 lines and sends the rest to docs/, where
    each page opens with its title and a paragraph on what it covers (not straight into a table,
    a list or a code block), and the README links every page."""
    assert len(README.splitlines()) <= 300, "move the detail into a docs/ page"
    for page in sorted(DOCS.glob("*.md")):
        lines = page.read_text().splitlines()
        assert lines[0].startswith("# "), f"{page.name} starts without its title"
        opening = next(line for line in lines[1:] if line.strip())
        assert opening[0].isalpha(), f"{page.name}: say what the page covers before {opening!r}"
        assert f"(docs/{page.name})" in README, f"the README does not link docs/{page.name}"
