"""AgentBench OS-interaction tasks as plain data, with a validator that names file, task and field."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import TaskContext

LANGUAGES = ("bash", "python")
READS_ARGUMENTS = {"python": re.compile(r"\bargv\b"), "bash": re.compile(r"\$\{?(1(?!\d)|[@*])")}
log = logging.getLogger(__name__)
_WARNED: set[tuple[str, int]] = set()  # quirks reported once per task, not at every load


@dataclass(frozen=True)
class Script:
    """A script to run inside the container: inline code or a file under the set's scripts folder."""

    language: str = "bash"
    code: str | None = None
    file: str | None = None

    def source(self, scripts_dir: Path | None) -> str:
        """Return the script text, reading the file relative to the scripts folder."""
        if self.code is not None:
            return self.code
        assert self.file is not None
        path = (scripts_dir or Path(".")) / self.file
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TaskFormatError(f"script file {path} cannot be read: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise TaskFormatError(f"script file {path} is not UTF-8 text (byte {exc.start})") from exc

    def reads_arguments(self, scripts_dir: Path | None) -> bool:
        """True when the script's text refers to its arguments (see ShellTask.uses_answer)."""
        try:
            text = self.source(scripts_dir)
        except TaskFormatError:
            return True
        return READS_ARGUMENTS[self.language].search(text) is not None


@dataclass(frozen=True)
class MatchEval:
    """Pass iff the answer equals `answer` (or matches `regex`), optionally stripped."""

    answer: str | None = None
    regex: str | None = None
    strip: bool = True


@dataclass(frozen=True)
class CheckEval:
    """Run check scripts in order; a None entry runs `example` and yields the expected value."""

    checks: tuple[Script | None, ...] = ()


@dataclass(frozen=True)
class ShellTask:
    """One OS-interaction task with its registry index and the folder its scripts live in."""

    env = "shell"  # a class attribute, not a field: which environment runs the task

    index: str
    description: str
    evaluation: MatchEval | CheckEval
    example: Script | None = None
    image: str | None = None
    local: str | None = None
    network: str | None = None  # loraloop's extension: a Docker network the task opts into (default none)
    init: tuple[Script, ...] = ()
    start: str | None = None
    labels: tuple[str, ...] = ()
    split: str = ""
    category: str = ""
    scripts_dir: Path | None = None
    source: str = ""

    @property
    def short_index(self) -> str | None:
        """`dev-001-dev-00000` -> `dev-001-00000`: the index without its file stem (AReaL's form)."""
        tail = f"{self.category}-{self.index[-5:]}"
        if not self.category or not self.index.endswith(tail):
            return None
        return self.index[: -len(tail)] + self.index[-5:]

    @property
    def uses_answer(self) -> bool:
        """True when grading reads the agent's answer, not only the container's state.

        AgentBench passes the answer as argv[1] to every check script of a chain. It is read by a
        match, by a chain with a null entry (the example's output is compared with it), and by a
        check script that looks at its arguments: python naming `argv`, bash naming `$1`, `${1}`,
        `$@` or `$*`. Those are decided from the scripts themselves, so the scripted teacher answers
        a check-only task whose script reads the answer and `finish`es one graded on state. A script
        that cannot be read counts as reading it: answering costs nothing, as a check that ignores
        argv[1] grades the state either way (a bash function's own `$1` errs the same harmless way).
        """
        if isinstance(self.evaluation, MatchEval):
            return True
        return any(check is None or check.reads_arguments(self.scripts_dir) for check in self.evaluation.checks)


@dataclass
class _Where:
    """Where a value sits, for error messages: file, task number and field path."""

    file: str
    task: int
    path: list[str] = field(default_factory=list)

    def at(self, name: str) -> _Where:
        return _Where(self.file, self.task, [*self.path, name])

    def fail(self, message: str) -> TaskFormatError:
        where = ".".join(self.path).replace(".[", "[") or "task"
        return TaskFormatError(f"{self.file}: task #{self.task}, field '{where}': {message}")


def _script(value: Any, where: _Where, default_language: str = "bash") -> Script:
    if isinstance(value, str):
        return Script(language=default_language, code=value)
    if not isinstance(value, dict):
        raise where.fail(f"expected a shell string or an object with 'code' or 'file', got {type(value).__name__}")
    language = value.get("language", default_language)
    if language not in LANGUAGES:
        raise where.at("language").fail(f"must be one of {', '.join(LANGUAGES)}, got {language!r}")
    code, file = value.get("code"), value.get("file")
    if (code is None) == (file is None):
        raise where.fail("needs exactly one of 'code' or 'file'")
    for name, item in (("code", code), ("file", file)):
        if item is not None and not isinstance(item, str):
            raise where.at(name).fail(f"must be a string, got {type(item).__name__}")
    return Script(language=language, code=code, file=file)


def _scripts(value: Any, where: _Where) -> tuple[Script, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(
        _script(item, where.at(f"[{i}]") if isinstance(value, list) else where) for i, item in enumerate(items)
    )


def _evaluation(value: Any, where: _Where) -> tuple[MatchEval | CheckEval, Script | None]:
    if not isinstance(value, dict):
        raise where.fail("must be an object with 'match' or 'check'")
    example = _script(value["example"], where.at("example")) if value.get("example") is not None else None
    if "match" in value:
        match = value["match"]
        if isinstance(match, str):
            return MatchEval(answer=match), example
        if isinstance(match, dict) and ("answer" in match or "regex" in match):
            strip = match.get("strip", True)
            if not isinstance(strip, bool):
                raise where.at("match").at("strip").fail(f"must be true or false, got {strip!r}")
            return MatchEval(answer=match.get("answer"), regex=match.get("regex"), strip=strip), example
        raise where.at("match").fail("must be a string or an object with 'answer' or 'regex'")
    if "check" in value:
        raw = value["check"]
        items = raw if isinstance(raw, list) else [raw]
        checks = tuple(
            None if item is None else _script(item, where.at("check").at(f"[{i}]")) for i, item in enumerate(items)
        )
        if not checks:
            raise where.at("check").fail("needs at least one script")
        if any(c is None for c in checks) and example is None:
            raise where.at("example").fail("is required when 'check' contains null (it yields the expected value)")
        return CheckEval(checks=checks), example
    raise where.fail("needs 'match' or 'check'")


def _start(value: Any, where: _Where, scripts_dir: Path | None) -> str:
    """`start` as AgentBench reads it (a script object) but run as text in the interactive shell.

    A `file` is read now, relative to the scripts folder, as AgentBench does when it loads a task.
    """
    script = _script(value, where)
    if script.language != "bash":
        raise where.at("language").fail(
            f"must be 'bash': start runs in the interactive bash shell, got {script.language!r}"
        )
    if script.code is not None:
        return script.code
    if script.file is None:
        raise where.at("file").fail("names neither code nor a file")
    path = (scripts_dir or Path(".")) / script.file
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise where.at("file").fail(f"{path} cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise where.at("file").fail(f"{path} is not UTF-8 text (byte {exc.start})") from exc


def parse_shell_task(
    raw: Any,
    *,
    file: str,
    number: int,
    index: str,
    split: str = "",
    category: str = "",
    scripts_dir: Path | None = None,
) -> ShellTask:
    """Validate one raw AgentBench task object and return it as a ShellTask."""
    where = _Where(file, number)
    if not isinstance(raw, dict):
        raise where.fail(f"a task must be an object, got {type(raw).__name__}")
    description = raw.get("description")
    if not isinstance(description, str) or not description.strip():
        raise where.at("description").fail("must be a non-empty string")
    create = raw.get("create") or {}
    if isinstance(create, list):
        # Published AgentBench data has a few tasks whose `create` is a list (data/dev.json #10,
        # data/5/new.json #7). AgentBench's loader only asks `"local" in create` / `"init" in
        # create`, both false for a list: default image, no init. Do the same, and say so.
        if (file, number) not in _WARNED:
            _WARNED.add((file, number))
            log.warning(
                "%s: task #%d, field 'create' is a list; ignored as AgentBench does (default image, no init)",
                file,
                number,
            )
        create = {}
    if not isinstance(create, dict):
        raise where.at("create").fail(f"must be an object, got {type(create).__name__}")
    init = _scripts(create["init"], where.at("create").at("init")) if create.get("init") is not None else ()
    start = _start(raw["start"], where.at("start"), scripts_dir) if raw.get("start") is not None else None
    if "evaluation" not in raw:
        raise where.at("evaluation").fail("is required")
    evaluation, example = _evaluation(raw["evaluation"], where.at("evaluation"))
    if example is None and raw.get("example") is not None:
        example = _script(raw["example"], where.at("example"))
    labels = raw.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise where.at("labels").fail("must be a list of strings")
    for name in ("image", "local", "network"):
        if create.get(name) is not None and not isinstance(create[name], str):
            raise where.at("create").at(name).fail("must be a string")
    return ShellTask(
        index=index,
        description=description,
        evaluation=evaluation,
        example=example,
        image=create.get("image"),
        local=create.get("local"),
        network=create.get("network"),
        init=init,
        start=start,
        labels=tuple(labels),
        split=split,
        category=category,
        scripts_dir=scripts_dir,
        source=f"{file}#{number}",
    )


def parse_task(raw: Any, ctx: TaskContext) -> ShellTask:
    """The shell kind's parser: a raw AgentBench task read at `ctx`, named by AgentBench's index rule."""
    return parse_shell_task(
        raw,
        file=ctx.file,
        number=ctx.number,
        index=ctx.index,
        split=ctx.split,
        category=ctx.stem,
        scripts_dir=ctx.scripts_dir,
    )


def missing_scripts(task: ShellTask) -> list[str]:
    """Script files a task names that do not exist under its scripts folder."""
    base = task.scripts_dir or Path(".")
    scripts = list(task.init) + [task.example] + list(getattr(task.evaluation, "checks", ()))
    return [str(base / s.file) for s in scripts if s is not None and s.file and not (base / s.file).is_file()]
