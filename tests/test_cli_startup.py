"""Start-up cost: cron and CI pay it on every call, so `arena --help` must not import the heavy libraries."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("polars", "numpy", "scipy", "statsmodels", "tiktoken", "matplotlib")


def test_help_imports_no_heavy_module():
    code = (
        "import sys\n"
        "from arena_cli.cli import app\n"
        "from typer.main import get_command\n"
        "command = get_command(app)\n"
        "for name in command.commands: command.commands[name].get_help(command.make_context('arena', [name, '--help'], resilient_parsing=True))\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "", f"`arena --help` imports {loaded}"
