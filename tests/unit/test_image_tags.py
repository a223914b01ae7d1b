"""Image references: how a tag is read, and every Dockerfile's default base pinned to a fixed tag.
The Compose files' images are checked with `docker compose config` in tests/integration/stack/test_compose.py."""

import re
from pathlib import Path

import pytest

from tests.helpers import image_tag


@pytest.mark.parametrize(
    "ref,tag",
    [
        ("redis:7.4.11", "7.4.11"),
        ("quay.io/minio/mc:RELEASE.2025-08-13T08-35-41Z", "RELEASE.2025-08-13T08-35-41Z"),
        ("redis", None),
        ("localhost:5000/redis", None),
        ("localhost:5000/redis:latest", "latest"),
    ],
)
def test_image_tag_reads_references(ref, tag):
    assert image_tag(ref) == tag


def test_dockerfile_bases_have_fixed_tags():
    """Each Dockerfile's default BASE (used when built without `make images`) names a fixed tag; only
    loraloop/* bases, which `make images` builds here, may be :latest."""
    bases = {
        str(path): re.findall(r"^ARG BASE=(\S+)$", path.read_text(), re.M)
        for path in Path("images").rglob("Dockerfile")
    }
    assert len(bases) >= 8 and all(bases.values()), bases
    floating = {
        path: refs
        for path, refs in bases.items()
        if any(image_tag(ref) in (None, "latest") and not ref.startswith("loraloop/") for ref in refs)
    }
    assert not floating, floating
