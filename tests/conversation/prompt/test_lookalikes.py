"""The look-alike table is what its script writes from this Python's Unicode data."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from conversation.prompt.lookalike_table import UNICODE_VERSION

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(
    unicodedata.unidata_version != UNICODE_VERSION,
    reason=f"the table was written from Unicode {UNICODE_VERSION}",
)
def test_the_committed_table_is_what_the_script_writes():
    done = subprocess.run(
        [sys.executable, "-m", "lab.make_lookalikes", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
