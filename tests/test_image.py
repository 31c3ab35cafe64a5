"""The Docker image, checked without a Docker engine: its files, pins and commands.

No engine runs where the suite runs, so what can be checked is: the build context holds what the
Dockerfile copies, versions are pinned within pyproject's ranges, and the image's commands (one
config file for all, a generated default config, the heartbeat) work as the image runs them.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def ignored(path: str) -> bool:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return any(fnmatch.fnmatch(path, p.removeprefix("**/")) for p in patterns)


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            found[canonicalize_name(name)] = version
    return found


def test_every_runtime_dependency_is_pinned_within_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = pins()
    for text in project["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, (
            f"{requirement.name} is not pinned in constraints.txt (the image installs only "
            "pinned versions; see the refresh command at its top)"
        )
        assert requirement.specifier.contains(pinned[name]), (
            f"constraints.txt pins {name}=={pinned[name]}, outside pyproject's {requirement}"
        )


def test_the_build_context_holds_what_the_dockerfile_copies():
    copied = re.findall(r"^COPY (.+) \S+$", DOCKERFILE, flags=re.MULTILINE)
    sources = [source for line in copied for source in line.split()]
    assert "examples" in sources  # the README's replay runs in the image
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not ignored(source), f"COPY {source}: excluded by .dockerignore"
    assert "config.toml" not in sources and ignored("config.toml")  # may hold a token


def test_the_image_stops_on_sigterm_and_checks_its_health():
    # Exec form: python is PID 1 and receives SIGTERM itself (no shell in between).
    assert 'ENTRYPOINT ["python", "-m", "bot"]' in DOCKERFILE
    assert re.search(
        r'^HEALTHCHECK .*\n?.*CMD \["python", "-m", "bot.serve.health"\]', DOCKERFILE, re.M
    )
    assert not re.search(r"\bsed\b", DOCKERFILE)  # no build step depends on config contents


@pytest.mark.slow
def test_the_images_commands_share_one_config_and_keep_the_store_on_the_volume(tmp_path):
    """The image's steps, run here: generate the default config, then use it from every command."""
    app, config_dir, data = tmp_path / "app", tmp_path / "config", tmp_path / "data"
    for folder in (app, config_dir, data):
        folder.mkdir()
    (app / "examples").symlink_to(ROOT / "examples")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "THREADWISE_CONFIG": str(config_dir / "config.toml"),
        "THREADWISE_DATA_DIR": str(data),
    }

    def bot(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bot", *args], capture_output=True, text=True, cwd=app,
            env={**env, **extra}, timeout=120,
        )  # fmt: skip

    generated = bot("check-config", THREADWISE_CONFIG="")
    assert generated.returncode == 0, generated.stderr
    (config_dir / "config.toml").write_text(generated.stdout)
    checked = bot("check-config")
    assert checked.returncode == 0, checked.stderr
    assert f"# effective configuration from {config_dir / 'config.toml'}" in checked.stdout
    replayed = bot("replay", "--no-model", "examples/support-channel.json")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stderr == ""  # no "using built-in defaults" note: the config was found
    exported = bot("export")
    assert exported.returncode == 2 and str(data) in exported.stderr  # the store's place
    # The repository's config.toml mounted as it is: its relative store lands on the volume.
    mounted = bot("export", THREADWISE_CONFIG=str(ROOT / "config.toml"))
    assert str(data / "data" / "threadwise.sqlite3") in mounted.stderr
