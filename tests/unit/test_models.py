"""`loraloop models prepare` converts the packaged GGUF once: a folder prepared from the same file is left
alone, however the path to that file was spelled (a virtualenv reached through a link, as worktrees share one)."""

import json

from loraloop.models.prepare import MARKER, gguf_path, prepare


def test_a_prepared_folder_is_not_prepared_again_through_a_linked_path(tmp_path):
    source = gguf_path("smollm2-135m")
    (tmp_path / "linked").symlink_to(source.parent)
    out = tmp_path / "model"
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"model": "smollm2-135m", "source": str(tmp_path / "linked" / source.name)}))
    assert prepare("smollm2-135m", out) == out
    assert [p.name for p in out.iterdir()] == [MARKER]  # nothing converted, nothing written
