"""The Python code of docs/python.md runs as written, block after block in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "python.md"


def test_every_python_block_of_the_python_page_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) >= 3, "the page shows its examples"
    monkeypatch.chdir(tmp_path)  # the examples write runs/ where they run
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    assert (tmp_path / "runs" / "worm-ppo-py" / "summary.json").is_file()


def test_the_pendulum_example_trains_and_prints_its_curve(tmp_path, monkeypatch, capsys):
    script = PAGE.parents[1] / "examples" / "python" / "pendulum_ppo.py"
    monkeypatch.setattr(
        "sys.argv", [str(script), "--steps", "4000", "--out", str(tmp_path / "pendulum")]
    )
    exec(compile(script.read_text(), str(script), "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "final:" in out and "env steps" in out, out
