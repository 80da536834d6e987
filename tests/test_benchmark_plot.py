"""benchmarks/plot.py: what it accepts from the harness's JSON, what it refuses (with the file and
the reason), and that it draws a PNG."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import plot  # noqa: E402


def step(seconds: float | None, ok: bool = True) -> dict[str, Any]:
    return {"seconds": seconds, "max_rss": 1, "ok": ok, "note": ""}


def result(wecs: int, objects: int = 200, fleet: str = "project", **seconds: float) -> dict[str, Any]:
    return {"fleet": fleet, "wecs": wecs, "objects": objects,
            "steps": {key.replace("__", "."): step(value) for key, value in seconds.items()}}


def write(tmp_path: Path, name: str, results: list[dict[str, Any]], floor: float | None = None) -> Path:
    path = tmp_path / name
    floors = {"floor.import": step(floor)} if floor else {}
    path.write_text(json.dumps({"date": "2026-01-01", "results": results, "floors": floors}))
    return path


def test_series_merge_files_sorted_by_size_later_figure_wins(tmp_path: Path) -> None:
    first = write(tmp_path, "a.json", [result(1000, bare__full=2.0, bare__noop=0.3),
                                       result(100, bare__full=0.5, kustomize__all=8.0)], floor=0.2)
    second = write(tmp_path, "b.json", [result(1000, bare__full=1.8)], floor=0.25)
    results, floor = plot.load([first, second])
    assert floor == 0.25
    points = plot.series(results)
    assert points == {"bare.full": [(100, 0.5), (1000, 1.8)], "bare.noop": [(1000, 0.3)],
                      "kustomize.all": [(100, 8.0)]}


def test_failed_missing_and_zero_figures_are_left_out(tmp_path: Path) -> None:
    res = result(10, bare__full=1.0)
    res["steps"]["bare.noop"] = step(0.3, ok=False)
    res["steps"]["bare.location"] = step(None)
    res["steps"]["worktree.full"] = step(0.0)
    res["steps"]["worktree.noop"] = "garbage"
    results, floor = plot.load([write(tmp_path, "a.json", [res])])
    assert plot.series(results) == {"bare.full": [(10, 1.0)]} and floor is None


@pytest.mark.parametrize("content, message", [
    ("{not json", "a.json: not JSON"),
    ('{"date": "x"}', 'a.json: no "results" list'),
    ('[1, 2]', 'a.json: no "results" list'),
    ('{"results": [{"wecs": 10, "objects": 200}]}', "a.json: results[0] lacks wecs, objects or steps"),
    ('{"results": [{"wecs": 0, "objects": 200, "steps": {}}]}', "a.json: results[0] lacks"),
])
def test_bad_files_are_refused_with_their_name(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "a.json").write_text(content)
    with pytest.raises(plot.PlotError, match=message.replace("[", r"\[").replace("]", r"\]")):
        plot.load([tmp_path / "a.json"])


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(plot.PlotError, match="nothing.json: cannot read"):
        plot.load([tmp_path / "nothing.json"])


def test_one_fleet_and_one_object_count_per_plot() -> None:
    results = [result(10, fleet="project", bare__full=1.0), result(10, fleet="independent", bare__full=2.0),
               result(20, objects=40, fleet="independent", bare__full=3.0)]
    with pytest.raises(plot.PlotError, match=r"several fleet \(independent, project\): choose one with --fleet"):
        plot.choose(results, None, None)
    with pytest.raises(plot.PlotError, match=r"several objects \(40, 200\): choose one with --objects"):
        plot.choose(results, "independent", None)
    chosen, fleet, objects = plot.choose(results, "independent", 40)
    assert (chosen, fleet, objects) == ([results[2]], "independent", 40)
    with pytest.raises(plot.PlotError, match="no result with fleet other"):
        plot.choose(results, "other", None)
    with pytest.raises(plot.PlotError, match="no results in the input"):
        plot.choose([], None, None)


def test_main_reports_bad_input_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only_failures = write(tmp_path, "a.json", [{**result(10), "steps": {"bare.full": step(1.0, ok=False)}}])
    assert plot.main([str(only_failures), "-o", str(tmp_path / "x.png")]) == 2
    assert "plot.py: no step in the input has a figure to plot" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_main_draws_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="plot.py needs matplotlib: pip install -e '.[bench]'")
    path = write(tmp_path, "a.json", [result(w, bare__full=w / 500, bare__noop=0.3, worktree__location=0.4,
                                             kustomize__all=w * 0.08) for w in (100, 1000, 10000)], floor=0.2)
    out = tmp_path / "scaling.png"
    assert plot.main([str(path), "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
