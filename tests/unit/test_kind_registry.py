"""The one line that registers a kind (LORALOOP_KINDS): every malformed or wrong entry fails naming it, before any
episode; empty entries are nothing."""

import pytest

from loraloop.errors import ConfigError, TaskFormatError
from loraloop.kinds import prompts, registry


@pytest.fixture
def line(monkeypatch):
    """Set LORALOOP_KINDS for one test, with the registry's caches forgotten before and after."""

    def forget() -> None:
        for cached in (registry.kind_modules, registry.env_kind, prompts.builder):
            cached.cache_clear()

    def set_line(value: str) -> None:
        monkeypatch.setenv(registry.CONFIG_VARIABLE, value)
        forget()

    yield set_line
    monkeypatch.delenv(registry.CONFIG_VARIABLE, raising=False)
    forget()


@pytest.mark.parametrize("value", ["", " ", ",", " , ,"])
def test_an_empty_line_registers_nothing(line, value):
    line(value)
    assert registry.kind_modules() == registry.KIND_MODULES


@pytest.mark.parametrize("entry", ["echo", "echo=", "=mod.kind", "ec ho=mod.kind", "echo=mod..kind", "echo=mod.k-ind"])
def test_a_malformed_entry_is_named(line, entry):
    line(f"quiz=my.kinds.quiz, {entry}")
    with pytest.raises(ConfigError, match=f"LORALOOP_KINDS: {entry.strip()!r} is not name=module"):
        registry.kind_modules()


def test_a_bundled_name_cannot_be_taken(line):
    line("shell=my.shell, web=my.web")
    with pytest.raises(ConfigError, match="LORALOOP_KINDS: shell, web is a bundled kind's name"):
        registry.kind_modules()


def test_a_module_that_cannot_be_imported_or_holds_no_kind_is_named(line):
    line("gone=no_such_package.kind, bare=loraloop.errors, other=loraloop.kinds.web")
    with pytest.raises(ConfigError, match="kind 'gone': cannot import no_such_package.kind"):
        registry.env_kind("gone")
    with pytest.raises(ConfigError, match=r"kind 'bare': loraloop.errors must define KIND = EnvKind\(name='bare'"):
        registry.env_kind("bare")
    with pytest.raises(ConfigError, match=r"kind 'other': loraloop.kinds.web must define KIND = EnvKind\(name='other'"):
        registry.env_kind("other")  # a KIND of another name
    with pytest.raises(TaskFormatError, match=r"tasks.json: unknown environment kind 'nope' \(known: shell, web, tau2"):
        registry.env_kind("nope", where="tasks.json")
