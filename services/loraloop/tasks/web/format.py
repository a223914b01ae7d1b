"""REAL (AGI Inc) web tasks as plain data, with a validator that names file, task and field.

A task is REAL's JSON (`id`, `goal`, `website`, `evals`, ...) plus two optional loraloop fields that
REAL ignores: `solution` and `wrong_path`, scripted steps the teacher and the tests replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import TaskContext

EVAL_TYPES = ("jmespath", "script", "llm_boolean")
STEP_KINDS = (
    "click",
    "dblclick",
    "hover",
    "check",
    "uncheck",
    "focus",
    "clear",
    "fill",
    "select_option",
    "press",
    "goto",
    "go_back",
    "go_forward",
    "send_msg_to_user",
    "report_infeasible",
    "noop",
)
# REAL's site ids, grouped the way the seed's --subset names them (shopping, email, ...).
SITE_CATEGORIES = {
    "omnizon": "shopping",
    "shopzon": "shopping",
    "dashdish": "food",
    "opendining": "food",
    "gomail": "email",
    "quickmail": "email",
    "gocalendar": "calendar",
    "networkin": "social",
    "staynb": "travel",
    "marrisuite": "travel",
    "fly-unified": "travel",
    "udriver": "travel",
    "topwork": "jobs",
    "zilloft": "real-estate",
}


@dataclass(frozen=True)
class WebEval:
    """One REAL criterion: a jmespath query with its expected value, a script, or an LLM rubric."""

    type: str
    query: str = ""
    expected_value: Any = None
    script: str = ""
    rubric: str = ""
    description: str = ""


@dataclass(frozen=True)
class ScriptStep:
    """One scripted step: an action kind, the element it targets (ARIA role + name) and a value."""

    do: str
    role: str = ""
    name: str = ""
    nth: int = 0
    value: str = ""


@dataclass(frozen=True)
class WebTask:
    """A REAL task with its registry index (`<version>.<id>`) and where its eval scripts live."""

    index: str
    id: str
    goal: str
    url: str
    site_id: str
    evals: tuple[WebEval, ...]
    raw: dict = field(compare=False, repr=False)
    difficulty: str = ""
    challenge_type: str = "action"
    possible: bool = True
    points: float = 1.0
    version: str = ""
    split: str = ""
    scripts_dir: Path | None = None
    scripts: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    solution: tuple[ScriptStep, ...] = ()
    wrong_path: tuple[ScriptStep, ...] = ()
    source: str = ""
    env = "web"

    @property
    def category(self) -> str:
        """The site id: `--subset omnizon` selects one site."""
        return self.site_id

    @property
    def labels(self) -> tuple[str, ...]:
        """Subset names besides split and site: the site's category, difficulty, challenge type."""
        found = (
            SITE_CATEGORIES.get(self.site_id, ""),
            self.difficulty,
            self.challenge_type,
            "possible" if self.possible else "infeasible",
        )
        return tuple(x for x in found if x)

    @property
    def short_index(self) -> str:
        """The bare REAL id (`omnizon-9` for `v2.omnizon-9`)."""
        return self.id

    @property
    def description(self) -> str:
        """The goal (the field shell tasks call description)."""
        return self.goal


def owns(raw: Any) -> bool:
    """True for a JSON object shaped like a REAL task (it has a goal and a website)."""
    return isinstance(raw, dict) and "goal" in raw and "website" in raw


def _fail(where: str, field_name: str, message: str) -> TaskFormatError:
    return TaskFormatError(f"{where}: field '{field_name}' {message}")


def _evals(value: Any, where: str) -> tuple[WebEval, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(where, "evals", "must be a non-empty list")
    out = []
    for i, raw in enumerate(value):
        name = f"evals[{i}]"
        if not isinstance(raw, dict):
            raise _fail(where, name, "must be an object")
        kind = raw.get("type") or ("script" if raw.get("script") else "")
        if kind not in EVAL_TYPES:
            raise _fail(where, f"{name}.type", f"must be one of {EVAL_TYPES}, got {kind!r}")
        if kind == "jmespath":
            if not isinstance(raw.get("query"), str) or not raw["query"]:
                raise _fail(where, f"{name}.query", "must be a non-empty jmespath string")
            import jmespath

            try:
                jmespath.compile(raw["query"])
            except jmespath.exceptions.JMESPathError as exc:
                raise _fail(where, f"{name}.query", f"is not valid jmespath ({exc})") from exc
            if "expected_value" not in raw:
                raise _fail(where, f"{name}.expected_value", "is required for a jmespath eval")
        if kind == "script" and not isinstance(raw.get("script"), str):
            raise _fail(where, f"{name}.script", "must name a script file (eval_<site>_<n>.py)")
        if kind == "llm_boolean" and not isinstance(raw.get("rubric"), str):
            raise _fail(where, f"{name}.rubric", "must be a string")
        out.append(
            WebEval(
                type=kind,
                query=raw.get("query", ""),
                expected_value=raw.get("expected_value"),
                script=raw.get("script", ""),
                rubric=raw.get("rubric", ""),
                description=str(raw.get("description", "")),
            )
        )
    return tuple(out)


def _steps(value: Any, where: str, name: str) -> tuple[ScriptStep, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(where, name, "must be a list of steps")
    steps = []
    for i, raw in enumerate(value):
        if not isinstance(raw, dict) or raw.get("do") not in STEP_KINDS:
            raise _fail(where, f"{name}[{i}].do", f"must be one of {', '.join(STEP_KINDS)}")
        unknown = set(raw) - {"do", "role", "name", "nth", "value"}
        if unknown:
            raise _fail(where, f"{name}[{i}]", f"has unknown key(s) {', '.join(sorted(unknown))}")
        steps.append(
            ScriptStep(
                do=raw["do"],
                role=str(raw.get("role", "")),
                name=str(raw.get("name", "")),
                nth=int(raw.get("nth", 0)),
                value=str(raw.get("value", "")),
            )
        )
    if steps and steps[-1].do not in ("send_msg_to_user", "report_infeasible"):
        raise _fail(where, name, "must end with send_msg_to_user or report_infeasible")
    return tuple(steps)


def parse_web_task(
    raw: Any,
    *,
    file: str,
    number: int = 0,
    split: str = "",
    scripts_dir: Path | None = None,
    scripts: dict[str, str] | None = None,
) -> WebTask:
    """Validate one REAL task object and return it as a WebTask; errors name file, task and field."""
    where = f"{file}: task {number}"
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where}: must be a JSON object, got {type(raw).__name__}")
    for name in ("id", "goal"):
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            raise _fail(where, name, "must be a non-empty string")
    where = f"{file}: task {raw['id']!r}"
    site = raw.get("website")
    if not isinstance(site, dict) or not isinstance(site.get("url"), str) or not site.get("id"):
        raise _fail(where, "website", "must be an object with 'id' and 'url'")
    if not site["url"].startswith(("http://", "https://")):
        raise _fail(where, "website.url", f"must be an http(s) URL, got {site['url']!r}")
    possible = raw.get("possible", True)
    if not isinstance(possible, bool):
        raise _fail(where, "possible", f"must be true or false, got {possible!r}")
    points = raw.get("points", 1)
    if not isinstance(points, (int, float)) or isinstance(points, bool):
        raise _fail(where, "points", f"must be a number, got {points!r}")
    version = str(raw.get("version", ""))
    evals = _evals(raw.get("evals"), where)
    for ev in evals:
        if ev.type == "script" and scripts is None and not (scripts_dir and (scripts_dir / ev.script).is_file()):
            place = (
                f"not found in {scripts_dir}"
                if scripts_dir
                else "but no scripts folder is set (load the task through a registry.yaml whose set names `scripts`)"
            )
            raise _fail(where, "evals", f"names script {ev.script!r}, {place}")
        if ev.type == "script" and scripts is not None and ev.script not in scripts:
            raise _fail(where, "evals", f"names script {ev.script!r}, absent from the registry's eval_scripts")
    return WebTask(
        index=f"{version}.{raw['id']}" if version else raw["id"],
        id=raw["id"],
        goal=raw["goal"].strip(),
        url=site["url"].rstrip("/"),
        site_id=str(site["id"]),
        evals=evals,
        raw=raw,
        difficulty=str(raw.get("difficulty", "")),
        challenge_type=str(raw.get("challengeType", "action")),
        possible=possible,
        points=float(points),
        version=version,
        split=split,
        scripts_dir=scripts_dir,
        scripts=scripts or {},
        solution=_steps(raw.get("solution"), where, "solution"),
        wrong_path=_steps(raw.get("wrong_path"), where, "wrong_path"),
        source=f"{file}#{number}",
    )


def parse_task(raw: Any, ctx: TaskContext) -> WebTask:
    """The web kind's parser: a REAL task read at `ctx` (its index is `<version>.<id>`)."""
    return parse_web_task(
        raw, file=ctx.file, number=ctx.number, split=ctx.split, scripts_dir=ctx.scripts_dir, scripts=ctx.scripts
    )
