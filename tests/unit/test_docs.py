"""The docs stay true to the tree: docs/settings.md is what `make docs` writes, every relative link and anchor in
README.md and docs/ leads somewhere, and every `make <target>` they name is a target of the Makefile."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from loraloop import settings_doc
from tests.helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*(`{3,}|~{3,})[^`]*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
MAKE = re.compile(r"(?:^|[\s;&|(])make\s+([^;&|#)`\n]*)")


def prose_and_code(text: str) -> tuple[list[str], list[str]]:
    """A page's prose lines (fenced code left out) and its code: each fenced block's lines and each code span."""
    prose, code, fenced = [], [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif fenced:
            code.append(line)
        else:
            prose.append(line)
            code.extend(match.group(2) for match in CODE_SPAN.finditer(line))
    return prose, code


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown page, a repeated heading numbered as GitHub numbers it."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_and_code(path.read_text())[0]:
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links of a page whose file does not exist or whose `#anchor` names no heading there."""
    broken = []
    for line in prose_and_code(page.read_text())[0]:
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{target} (no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{target} (no heading #{anchor} in {path.relative_to(ROOT)})")
    return broken


def make_targets_named(text: str) -> set[str]:
    """The targets of every `make …` command in a page's code (spans and fenced blocks): its words up to the first
    that is neither a target nor VAR=value."""
    targets = set()
    for code in prose_and_code(text)[1]:
        for args in MAKE.findall(code):
            try:
                words = shlex.split(args)
            except ValueError:
                words = args.split()
            for word in words:
                if re.fullmatch(r"[a-z][a-z0-9-]*", word):
                    targets.add(word)
                elif "=" not in word:
                    break
    return targets


def test_the_settings_page_is_what_make_docs_writes():
    page = ROOT / "docs" / "settings.md"
    assert page.exists() and page.read_text() == settings_doc.render(), (
        "docs/settings.md differs from the Settings class: run `make docs`"
    )


def test_every_setting_is_on_the_page_with_a_description():
    text = settings_doc.render()
    for name in settings_doc.Settings.model_fields:
        line = next(line for line in text.splitlines() if line.startswith(f"| `LORALOOP_{name.upper()}`"))
        assert not line.rstrip().endswith("|  |"), f"{name} has no description or comment in settings.py"
    assert str(ROOT) not in text, "a default holds this machine's checkout path"


def test_every_relative_link_leads_to_a_file_and_heading():
    broken = {str(page.relative_to(ROOT)): links for page in PAGES if (links := broken_links(page))}
    assert not broken, f"broken links: {broken}"


def test_every_make_target_named_in_the_docs_exists():
    defined = set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    missing = {
        str(page.relative_to(ROOT)): sorted(named - defined)
        for page in PAGES
        if (named := make_targets_named(page.read_text())) - defined
    }
    assert not missing, f"`make` targets the Makefile lacks: {missing}"


def test_the_checks_find_what_they_look_for():
    assert slug("Online RL (`loraloop train rl`)") == "online-rl-loraloop-train-rl"
    assert make_targets_named("run `make docker images` or\n```\nmake test-integration STAGE=train # x\n```") == {
        "docker",
        "images",
        "test-integration",
    }
    assert make_targets_named('`make eval EXPERIMENTS="a b"`; `make`') == {"eval"}
    assert make_targets_named("```\n make tunnel GPU_HOST=u@gpu ──ssh -L──▶ vllm :8000\n```") == {"tunnel"}
