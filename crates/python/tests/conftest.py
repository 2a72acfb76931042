"""Shared fixtures: the repository's paths, the `sieve` CLI and the plugin libraries.

`.ci/python.sh` builds the CLI and the plugins and passes them in the environment (SIEVE,
SIEVE_DRY_PLUGIN, SIEVE_GRAMMAR_PLUGIN) with SIEVE_TEST_REQUIRE=1, so that a missing one
fails the run; run by hand without them, the tests that need one are skipped (or pass the
paths yourself).
"""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "models" / "llama-gqa-tied"
_SUFFIX = {"darwin": "dylib", "win32": "dll"}.get(os.sys.platform, "so")


def _artifact(var: str, default: pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(os.environ.get(var, default))
    if path.exists():
        return path
    if os.environ.get("SIEVE_TEST_REQUIRE") == "1":
        pytest.fail(f"{var}: {path} does not exist")
    pytest.skip(f"{path} not built (set {var})")


@pytest.fixture(scope="session")
def sieve_cli() -> pathlib.Path:
    """The `sieve` binary."""
    return _artifact("SIEVE", ROOT / "target" / "debug" / "sieve")


@pytest.fixture(scope="session")
def dry_plugin() -> pathlib.Path:
    """The DRY plugin library."""
    return _artifact("SIEVE_DRY_PLUGIN", ROOT / "target" / "debug" / f"libsieve_dry.{_SUFFIX}")


@pytest.fixture(scope="session")
def grammar_plugin() -> pathlib.Path:
    """The grammar plugin library."""
    return _artifact("SIEVE_GRAMMAR_PLUGIN", ROOT / "target" / "debug" / f"libsieve_grammar.{_SUFFIX}")


@pytest.fixture(scope="session")
def fixture_model() -> pathlib.Path:
    """A tiny Llama (vocabulary 300) with its tokenizer.json."""
    return FIXTURE
