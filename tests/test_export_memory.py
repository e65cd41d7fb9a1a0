"""--export out.png of a BERT-base-sized document under a 1 GiB address-space limit (ulimit -v, RLIMIT_AS in the
child): each picture is drawn, or refused in one line that names its cause — memory when the drawing would not fit
in what the limit leaves — and nothing is half-written."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_limits import assert_refused, limit  # noqa: F401  (limit: the fixture, the interpreter + 800 MiB)
from test_limits import attncli as limited

pytestmark = [pytest.mark.slow]
BERT = (Path(__file__).resolve().parent.parent / "examples" / "bert_base.yaml").read_text()


@pytest.fixture()
def bert(tmp_path) -> Path:
    pytest.importorskip("resvg_py")
    doc = tmp_path / "bert.yaml"  # the example's shapes, with tokens any machine's fonts have
    doc.write_text(BERT.replace("tokens: 我想吃酸菜鱼", "tokens: [I, want, to, eat, fish, soup]", 1))
    assert "tokens: [I," in doc.read_text()
    return doc


def test_a_drawing_beyond_the_memory_left_names_memory(limit, tmp_path, bert):  # noqa: F811
    """Within PNG's pixel limits but not within memory: 600 rows drawn at full width, under the limit."""
    (tmp_path / "tall.yaml").write_text("inputs: {random: normal, seed: 0, shape: [600, 16]}\n")
    out = tmp_path / "out.png"
    result, seconds = limited(limit, "compute", "tall.yaml", "--full", "--only", "inputs", "--export", str(out),
                              cwd=tmp_path)
    assert_refused(result, seconds, "--export: drawing this PNG of", "of memory, more than the",
                   "ulimit -v")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bert.yaml", "tall.yaml"]


def test_bert_base_exports_under_1_gib_are_drawn_or_refused_in_one_line(limit, tmp_path, bert):  # noqa: F811
    out = tmp_path / "out.png"
    whole, seconds = limited(limit, "compute", str(bert), "--export", str(out), cwd=tmp_path)
    assert_refused(whole, seconds, "more than a PNG may be")  # 688 lines of 12 heads: no viewer opens it
    assert not out.exists()
    one, _ = limited(limit, "compute", str(bert), "--head", "1", "--export", str(out), cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
