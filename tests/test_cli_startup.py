"""Start-up cost: cron and CI pay it on every call, so `arena --help` must not import the heavy libraries."""

from __future__ import annotations

import ast
import os
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


def _votes(tmp_path, battles: int):
    """A parquet file of ``battles`` simulated votes between 4 models."""
    from sim_battles import simulate

    votes = tmp_path / "votes.parquet"
    simulate(battles, 4, seed=1)[0].write_parquet(votes)
    return votes


def test_a_fit_to_a_file_needs_no_terminal_library_and_exits_cleanly(tmp_path):
    """A cron fit (-o FILE, nothing on stderr) never imports rich; the entry point freezes the garbage
    collector at exit (to skip the last collection), and the output and exit code are whole."""
    votes, out = _votes(tmp_path, 600), tmp_path / "fit.json"
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('rich' in sys.modules, file=sys.stderr))\n"
        "sys.argv = ['arena', 'fit', sys.argv[1], '--ci', 'none', '-o', sys.argv[2]]\n"
        "from arena_cli.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(votes), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "False"
    assert out.read_text().startswith("{")
    failed = subprocess.run([sys.executable, "-m", "arena_cli", "fit", str(tmp_path / "missing.parquet")], capture_output=True, text=True)
    assert failed.returncode == 3 and "no such file" in failed.stderr


def test_a_command_run_builds_only_that_command_and_says_what_the_whole_app_says():
    """`arena fit …` builds the fit command alone (every command's options cost start-up time); what it prints
    (help, usage errors) is what the app of every command prints for it."""
    from typer.main import get_command
    from typer.testing import CliRunner

    from arena_cli.cli import COMMANDS, app, build_app

    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith('arena_cli.commands.')), file=sys.stderr))\n"
        "sys.argv = ['arena', 'judges', '--help']\n"
        "from arena_cli.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    others = {f"arena_cli.commands.{module}" for name, (module, _) in COMMANDS.items() if module != "judges"} | {"arena_cli.commands.store"}
    loaded = set(ast.literal_eval(done.stderr.strip()))
    assert "arena_cli.commands.judges" in loaded and not loaded & others
    runner = CliRunner()
    for args in (["fit", "--help"], ["fit", "--no-such-option"], ["store", "check", "--help"], ["store"], ["matrix"]):
        alone, whole = runner.invoke(build_app(args[0]), args), runner.invoke(app, args)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert set(COMMANDS) | {"store"} == set(get_command(app).commands)  # type: ignore[attr-defined]


def test_a_command_sets_the_allocator_before_polars_loads_for_what_it_does_and_keeps_a_users_own(tmp_path):
    """polars' allocator reads its settings once, when polars is loaded: a command that bootstraps must set them
    first (freed pages go back within 200 ms, so forked workers do not keep them: ``RESAMPLE_ALLOCATOR``); one
    that reads only JSON files and does not resample keeps them 5 s (``JSON_READ_ALLOCATOR``); a user's own is
    kept, and a command that reads parquet without resampling leaves them as they are."""
    import polars as pl

    from arena_cli.commands.options import ALLOCATOR, JSON_READ_ALLOCATOR, RESAMPLE_ALLOCATOR

    votes = _votes(tmp_path, 300)
    lines = tmp_path / "votes.log"
    pl.read_parquet(votes).write_ndjson(lines)
    code = (
        "import os, sys\n"
        "seen, setting, ci = [], sys.argv[2], sys.argv[3]\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'polars': seen.append(os.environ.get(setting, 'unset'))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "sys.argv = ['arena', 'fit', sys.argv[1], '--ci', ci, '--rounds', '20', '--workers', '2', '-o', os.devnull, *sys.argv[4:]]\n"
        "from arena_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print(seen[0], file=sys.stderr)\n"
    )
    cases = [
        (votes, "bootstrap", None, RESAMPLE_ALLOCATOR), (votes, "bootstrap", "narenas:2", "narenas:2"), (votes, "none", None, "unset"),
        (lines, "none", None, JSON_READ_ALLOCATOR, "--input-format", "jsonl"), (lines, "bootstrap", None, RESAMPLE_ALLOCATOR, "--input-format", "jsonl"),
        (lines, "none", "narenas:2", "narenas:2", "--input-format", "jsonl"), (votes, "none", None, "unset", "--input-format", "parquet"),
    ]
    for path, ci, given, expected, *options in cases:
        env = {k: v for k, v in os.environ.items() if k != ALLOCATOR} | ({ALLOCATOR: given} if given else {})
        done = subprocess.run([sys.executable, "-c", code, str(path), ALLOCATOR, ci, *options], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip().splitlines()[-1] == expected, (path.name, ci, given)
    named = tmp_path / "votes.jsonl"
    lines.rename(named)
    done = subprocess.run([sys.executable, "-c", code, str(named), ALLOCATOR, "none"], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != ALLOCATOR})
    assert done.stderr.strip().splitlines()[-1] == JSON_READ_ALLOCATOR


def test_the_allocator_setting_lasts_for_its_command_only(tmp_path, monkeypatch):
    """Commands run one after another in one process (typer's CliRunner, a program calling the entry point again):
    each has the setting it asked for while it runs, and leaves the environment as it found it when it ends, an
    error included; a user's own setting is kept throughout. (A command's setting was left behind: the next
    command inherited it, and the user's environment was changed.)"""
    import polars as pl
    from typer.testing import CliRunner

    from arena_cli import api
    from arena_cli.cli import app
    from arena_cli.commands.options import ALLOCATOR, JSON_READ_ALLOCATOR, RESAMPLE_ALLOCATOR

    votes = _votes(tmp_path, 300)
    lines = tmp_path / "votes.jsonl"
    pl.read_parquet(votes).write_ndjson(lines)
    seen: list[str | None] = []
    fit = api.fit
    monkeypatch.setattr(api, "fit", lambda *args, **kwargs: (seen.append(os.environ.get(ALLOCATOR)), fit(*args, **kwargs))[1])

    def run(*args: str, code: int = 0) -> str | None:
        seen.clear()
        done = CliRunner().invoke(app, ["fit", *args, "--rounds", "20", "--workers", "1", "-o", os.devnull])
        assert done.exit_code == code, done.output
        return seen[0] if seen else None

    for users in (None, "narenas:2"):
        if users is None:
            monkeypatch.delenv(ALLOCATOR, raising=False)
        else:
            monkeypatch.setenv(ALLOCATOR, users)
        assert run(str(lines), "--ci", "bootstrap") == (users or RESAMPLE_ALLOCATOR)
        assert os.environ.get(ALLOCATOR) == users
        assert run(str(lines), "--ci", "none") == (users or JSON_READ_ALLOCATOR)  # not the bootstrap's, left behind
        assert os.environ.get(ALLOCATOR) == users
        assert run(str(votes), "--ci", "none") == users  # parquet: nothing set
        run(str(lines), "--ci", "none", "--where", "no_such_column = 1", code=3)  # an error once the options are read
        assert os.environ.get(ALLOCATOR) == users

def test_the_arena_command_starts_openblas_without_threads_before_numpy_loads_and_keeps_a_users_own(tmp_path):
    """OpenBLAS reads its thread count once, as numpy loads: the command sets it first (``BLAS_SETTINGS``) and
    keeps a user's own value."""
    from arena_cli.cli import BLAS_SETTINGS

    votes = _votes(tmp_path, 300)
    code = (
        "import os, sys\n"
        "seen, setting = [], sys.argv[2]\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy': seen.append(os.environ.get(setting, 'unset'))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "sys.argv = ['arena', 'fit', sys.argv[1], '--ci', 'none', '-o', os.devnull]\n"
        "from arena_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print(seen[0], file=sys.stderr)\n"
    )
    name, value = BLAS_SETTINGS
    for given, expected in ((None, value), ("2", "2")):
        env = {k: v for k, v in os.environ.items() if k != name} | ({name: given} if given else {})
        done = subprocess.run([sys.executable, "-c", code, str(votes), name], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip().splitlines()[-1] == expected, given
