"""Wall time against fleet size, log-log, from the harness's JSON: full, no-op and one-change runs,
with kustomize's estimate for every overlay beside them.

    python benchmarks/run.py --sizes 100x200,300x200,1000x200 --rows bare,worktree,kustomize --json small.json
    python benchmarks/run.py --large --json large.json
    python benchmarks/plot.py small.json large.json -o benchmarks/scaling.png

Any number of files, each with any number of sizes; a size found twice takes the later figure.
The plot shows one fleet generator and one object count: when the files hold several, choose with
--fleet and --objects. Failed steps are left out. Needs matplotlib (`pip install -e '.[bench]'`).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "scaling.png"
PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("bare clone: `reconcile --commit`", (
        ("bare.full", "full"), ("bare.noop", "nothing changed"), ("bare.location", "one Location label changed"))),
    ("work tree: `reconcile`, `diff`", (
        ("worktree.full", "full"), ("worktree.noop", "nothing changed"),
        ("worktree.location", "one Location label changed: reconcile"),
        ("worktree.location_diff", "one Location label changed: diff"),
        ("checkout.full", "full, `--commit` in a checkout"))),
)
KUSTOMIZE = ("kustomize.all", "`kubectl kustomize`, every overlay (estimate)")
STYLE = {"full": ("tab:red", "o"), "noop": ("tab:green", "s"), "location": ("tab:blue", "^"),
         "location_diff": ("tab:cyan", "v"), "checkout": ("tab:purple", "D"), "kustomize": ("black", "x")}
FLOOR = "floor.import"

Points = dict[str, list[tuple[int, float]]]


class PlotError(Exception):
    """Input the plot cannot use; the message names the file and what is wrong."""


def load(paths: list[Path]) -> tuple[list[dict[str, Any]], float | None]:
    """Every result of every file, in order, each checked for the fields the plot reads; and the
    interpreter's start-up + import floor of the last file that measured it."""
    results: list[dict[str, Any]] = []
    floor = None
    for path in paths:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise PlotError(f"{path}: cannot read: {e.strerror or e}") from None
        except ValueError as e:
            raise PlotError(f"{path}: not JSON: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
            raise PlotError(f"{path}: no \"results\" list: is this the output of benchmarks/run.py --json?")
        for n, res in enumerate(doc["results"]):
            if not (isinstance(res, dict) and isinstance(res.get("wecs"), int) and res["wecs"] > 0
                    and isinstance(res.get("objects"), int) and isinstance(res.get("steps"), dict)):
                raise PlotError(f"{path}: results[{n}] lacks wecs, objects or steps")
            results.append(dict(res, fleet=str(res.get("fleet", "project"))))
        floor = _seconds(doc.get("floors", {}).get(FLOOR)) or floor
    return results, floor


def _seconds(step: object) -> float | None:
    """The seconds of a step that ran and succeeded, else None."""
    if isinstance(step, dict) and step.get("ok") and isinstance(step.get("seconds"), (int, float)) \
            and step["seconds"] > 0:
        return float(step["seconds"])
    return None


def choose(results: list[dict[str, Any]], fleet: str | None, objects: int | None) -> tuple[list[dict[str, Any]], str, int]:
    """The results of one fleet and one object count: the ones asked for, or the only ones there are."""
    for key, wanted, option in (("fleet", fleet, "--fleet"), ("objects", objects, "--objects")):
        if wanted is not None:
            results = [r for r in results if r[key] == wanted]
            if not results:
                raise PlotError(f"no result with {key} {wanted}")
        found = sorted({r[key] for r in results})
        if len(found) > 1:
            raise PlotError(f"the results hold several {key} ({', '.join(map(str, found))}): choose one with {option}")
    if not results:
        raise PlotError("no results in the input")
    return results, results[0]["fleet"], results[0]["objects"]


def series(results: list[dict[str, Any]]) -> Points:
    """Step key -> [(WECs, seconds)] sorted by WECs; failed or missing steps are left out."""
    by_key: dict[str, dict[int, float]] = {}
    keys = [key for _, rows in PANELS for key, _ in rows] + [KUSTOMIZE[0]]
    for res in results:
        for key in keys:
            seconds = _seconds(res["steps"].get(key))
            if seconds is not None:
                by_key.setdefault(key, {})[res["wecs"]] = seconds
    return {key: sorted(points.items()) for key, points in by_key.items()}


def _style(key: str) -> tuple[str, str, str]:
    """(colour, marker, line style) of a series."""
    if key == KUSTOMIZE[0]:
        return (*STYLE["kustomize"], "--")
    if key.startswith("checkout."):
        return (*STYLE["checkout"], "-.")
    return (*STYLE[key.split(".", 1)[1]], "-")


def _decades(ax: Any) -> float:
    low, high = ax.get_ylim()
    return math.log10(high / low)


def _minor_label(value: float, _: object) -> str:
    """Label the 2, 3 and 5 of each decade, the rest stay ticks."""
    return f"{value:g}" if round(value / 10 ** math.floor(math.log10(value))) in (2, 3, 5) else ""


def draw(points: Points, out: Path, fleet: str, objects: int, floor: float | None = None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    sizes = sorted({wecs for series_points in points.values() for wecs, _ in series_points})
    fig, axes = plt.subplots(1, len(PANELS), figsize=(13, 5.5), sharey=True)
    for ax, (title, rows) in zip(axes, PANELS):
        for key, label in (*rows, KUSTOMIZE):
            if key in points:
                color, marker, line = _style(key)
                xs, ys = zip(*points[key])
                ax.plot(xs, ys, color=color, marker=marker, linestyle=line, label=label)
        if floor:
            ax.axhline(floor, color="grey", linestyle=":", label="floor: Python start-up + `import ksgitops.cli.commands`")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label) if _decades(ax) <= 1.5 else NullFormatter())
        ax.set_title(title)
        ax.set_xlabel(f"WECs (× {objects} objects each)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", loc="upper left")
    axes[0].set_ylabel("wall time, seconds (one fresh process)")
    fig.suptitle(f"ksgitops: time against fleet size ({fleet} fleet)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", type=Path, help="files written by benchmarks/run.py --json")
    ap.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT, help=f"the PNG to write (default {DEFAULT_OUT})")
    ap.add_argument("--fleet", help="which fleet generator's results to plot, when the inputs hold several")
    ap.add_argument("--objects", type=int, help="which object count to plot, when the inputs hold several")
    args = ap.parse_args(argv)
    try:
        loaded, floor = load(args.inputs)
        results, fleet, objects = choose(loaded, args.fleet, args.objects)
        points = series(results)
        if not points:
            raise PlotError("no step in the input has a figure to plot (every one failed or was not run)")
        draw(points, args.output, fleet, objects, floor)
    except PlotError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output} ({len(results)} results, {len(points)} series)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
