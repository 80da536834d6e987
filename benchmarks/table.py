"""The harness's report: every row with its target, its yardsticks and met/missed, as Markdown."""
from __future__ import annotations

from dataclasses import dataclass

from measure import GiB, MiB
from filesystem import MEMORY_MIB, PROBE_FILES
from scenarios import SizeResult, Step

# Every measurement, in the order the report shows them: (step key, what runs).
ROWS: tuple[tuple[str, str], ...] = (
    ("worktree.full", "work-tree `reconcile`, full (no mailboxes yet)"),
    ("worktree.noop", "work-tree `reconcile`, nothing changed (no file written)"),
    ("worktree.diff_noop", "work-tree `diff`, nothing changed (exit 0)"),
    ("worktree.location_diff", "one Location label changed in the work tree: `diff` (exit 1, no file written)"),
    ("worktree.location", "… then `reconcile`"),
    ("worktree.repair_edit", "a generated file edited by hand: `reconcile` repairs it"),
    ("worktree.repair_delete", "a generated file deleted: `reconcile` restores it"),
    ("worktree.monitor_start", "`monitor start`: every folder of the work tree watched"),
    ("worktree.monitor_first", "with the monitor: the first `reconcile` (a new history: every path looked at)"),
    ("worktree.monitor_noop", "with the monitor: `reconcile`, nothing changed (no file written)"),
    ("worktree.monitor_diff_noop", "with the monitor: `diff`, nothing changed (exit 0)"),
    ("worktree.monitor_location_diff", "with the monitor: another Location label changed, `diff` at once (exit 1)"),
    ("worktree.monitor_location", "… then `reconcile`"),
    ("worktree.monitor_location_diff_paused",
     "with the monitor: the first Location's label changed again, `diff` 3 s later (planned ahead; exit 1)"),
    ("worktree.monitor_location_paused", "… then `reconcile`"),
    ("worktree.monitor_noop_here",
     "with the monitor, not handed to it (`KSGITOPS_HANDOFF=0`): `reconcile`, nothing changed"),
    ("worktree.monitor_location_diff_here", "… a third Location label changed, `diff` (exit 1)"),
    ("worktree.monitor_location_here", "… then `reconcile`"),
    ("worktree.monitor_repair_edit", "with the monitor: a generated file edited, its mtime set back: repaired"),
    ("kustomize.one", "`kubectl kustomize` of one overlay"),
    ("kustomize.all", "`kubectl kustomize` of every overlay (estimate)"),
    ("checkout.full", "`reconcile --commit` in a checkout, full (checkout written)"),
    ("checkout.full_status", "… then the first `git status` (hashes every file whose index entry has no stat data)"),
    ("checkout.git_checkout", "anchor: `git checkout` of the same commit into a fresh work tree"),
    ("checkout.git_checkout_status", "… then the first `git status` there"),
    ("checkout.noop", "`reconcile --commit` in a checkout, nothing changed (no new commit)"),
    ("checkout.location", "`reconcile --commit` in a checkout, one Location label changed"),
    ("checkout.workload", "`reconcile --commit` in a checkout, one workload object edited"),
    ("checkout.render", "`render WEC -o json`"),
    ("bare.full", "bare `reconcile --commit`, full"),
    ("bare.noop", "bare `reconcile --commit`, nothing changed (no new commit)"),
    ("bare.location", "bare `reconcile --commit`, one Location label changed"),
    ("bare.workload", "bare `reconcile --commit`, one workload object edited"),
    ("bare.status", "`status --commit`, every report new"),
    ("bare.status_noop", "`status --commit`, nothing changed"),
    ("bare.status_one", "`status --commit`, one report changed"),
    ("bare.foldin", "`fold-in`, every WEC's report ref new"),
    ("bare.foldin_one", "`fold-in`, one report ref moved"),
    ("bare.monitor_start", "`monitor start` of the bare repository (nothing watched: it runs the commands)"),
    ("bare.monitor_noop", "with the monitor: bare `reconcile --commit`, nothing changed"),
    ("bare.monitor_location", "with the monitor: bare `reconcile --commit`, another Location label changed"),
    ("bare.monitor_status_start", "`monitor start` of the bare repository again, after the status rows"),
    ("bare.monitor_status_one", "with the monitor: `status --commit`, another report changed"),
)
FLOORS: tuple[tuple[str, str], ...] = (
    ("floor.python", "`python -c pass`"),
    ("floor.import", "`python -c \"import ksgitops.cli.commands\"`"),
    ("floor.files", f"`python -c PROBE`: {PROBE_FILES:,} files of 600 bytes, ten to a folder, created (the file system's pace)"),
    ("floor.memory", f"`python -c MEMORY`: {MEMORY_MIB} MiB of memory written for the first time (the pace of fresh pages)"),
)
COUNTED = {"full": ("mailboxes", "mailboxes"), "render": ("render_objects", "objects"),
           "status": ("reports", "reports"), "foldin": ("report_refs", "refs")}


@dataclass(frozen=True)
class Target:
    seconds: float | None = None
    rss: int | None = None
    kustomize_ratio: float | None = None  # kustomize of every overlay ÷ this figure, at least

    def describe(self) -> str:
        parts = [f"≤ {self.seconds:g} s" if self.seconds is not None else "",
                 fmt_rss(self.rss, precise=False) if self.rss is not None else "",
                 f"≥ {self.kustomize_ratio:g}× faster than kustomize" if self.kustomize_ratio else ""]
        return ", ".join(p for p in parts if p)

    def judge(self, step: Step, ratio: float | None) -> bool | None:
        """True met, False missed, None when the only criterion could not be judged."""
        verdicts = []
        if self.seconds is not None:
            verdicts.append(step.seconds is not None and step.seconds <= self.seconds)
        if self.rss is not None:
            verdicts.append(step.max_rss is not None and step.max_rss <= self.rss)
        if self.kustomize_ratio is not None and ratio is not None:
            verdicts.append(ratio >= self.kustomize_ratio)
        return (step.ok and all(verdicts)) if verdicts else None


# Targets by (WECs, objects); other sizes have none. The 1,000 x 200 figures are the local loop's
# (work tree, checkout, status, bare); the rest carry over from the earlier targets.
TARGETS: dict[tuple[int, int], dict[str, Target]] = {
    (1000, 200): {
        "worktree.full": Target(kustomize_ratio=50), "worktree.noop": Target(seconds=0.3),
        "worktree.location_diff": Target(seconds=0.5), "worktree.location": Target(seconds=0.5),
        "worktree.monitor_noop": Target(seconds=0.3), "worktree.monitor_location_diff": Target(seconds=0.5),
        "worktree.monitor_location": Target(seconds=0.5), "worktree.monitor_location_diff_paused": Target(seconds=0.5),
        "worktree.monitor_location_paused": Target(seconds=0.5),
        "checkout.full": Target(seconds=10, rss=GiB, kustomize_ratio=20),
        "checkout.noop": Target(seconds=1), "checkout.location": Target(seconds=1),
        "bare.full": Target(seconds=2, rss=GiB, kustomize_ratio=20), "bare.noop": Target(seconds=0.3),
        "bare.location": Target(seconds=0.3), "bare.status": Target(seconds=5, rss=300 * MiB),
        "bare.status_one": Target(seconds=0.3), "bare.foldin": Target(seconds=10),
        "bare.monitor_noop": Target(seconds=0.3), "bare.monitor_location": Target(seconds=0.3),
        "bare.monitor_status_one": Target(seconds=0.3),
    },
    # the project fleet places ~83% of its objects on a WEC: 240 objects give ~200k reports
    (1000, 240): {"bare.status": Target(seconds=20), "bare.status_one": Target(seconds=1),
                  "bare.foldin": Target(seconds=10)},
    (10000, 200): {
        "bare.full": Target(seconds=120, rss=4 * GiB, kustomize_ratio=20), "bare.noop": Target(rss=4 * GiB),
        "worktree.full": Target(rss=4 * GiB), "worktree.noop": Target(rss=4 * GiB),
        "checkout.full": Target(seconds=120, rss=4 * GiB, kustomize_ratio=20),
    },
}


def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def fmt_rss(x: int | None, precise: bool = True) -> str:
    if x is None:
        return "—"
    if not precise:
        return f"≤ {x / GiB:g} GiB" if x >= GiB else f"≤ {x / MiB:g} MiB"
    return f"{x / GiB:.2f} GiB" if x >= GiB else f"{x / MiB:.0f} MiB"


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("**met**" if ok else "**missed**")


def _seconds(res: SizeResult, key: str) -> float | None:
    step = res.steps.get(key)
    return step.seconds if step is not None and step.ok and step.seconds else None


def kustomize_ratio(res: SizeResult, key: str) -> float | None:
    """kustomize of every overlay ÷ the figure of `key`."""
    every, mine = _seconds(res, "kustomize.all"), _seconds(res, key)
    return every / mine if every and mine else None


def yardsticks(res: SizeResult, key: str) -> str:
    """The figure in units measured side by side: kustomize builds of one overlay, `git checkout`."""
    mine, parts = _seconds(res, key), []
    one = _seconds(res, "kustomize.one")
    if mine and one and not key.startswith("kustomize.") and key != "checkout.git_checkout":
        parts.append(f"{mine / one:.1f} kustomize builds")
    ratio = kustomize_ratio(res, key) if key.endswith(".full") else None
    if ratio:
        parts.append(f"kustomize of every overlay ÷ this: {ratio:.1f}×")
    anchor = _seconds(res, "checkout.git_checkout")
    if mine and anchor and key == "checkout.full":
        parts.append(f"{mine / anchor:.1f}× `git checkout`")
    step = res.steps.get(key)
    if step is not None and step.after is not None and step.after >= 0.5:
        parts.append(f"its child (memos, a checkout's sync) done {step.after:.1f} s after the answer")
    return "; ".join(parts) or "—"


def _title(res: SizeResult, key: str, title: str) -> str:
    counted = COUNTED.get(key.split(".", 1)[1])
    if counted and counted[0] in res.counts:
        title += f"; {res.counts[counted[0]]:,} {counted[1]}"
    if key == "kustomize.one" and "kustomize_sampled" in res.counts:
        failed = res.counts.get("kustomize_failed", 0)
        title += f" (median of a sample of {res.counts['kustomize_sampled']}{f', {failed} failed' if failed else ''})"
    return title


def rows_for(res: SizeResult) -> list[list[str]]:
    targets = TARGETS.get((res.wecs, res.objects), {})
    size = f"{res.wecs:,} × {res.objects}, {res.fleet}"
    rows = []
    for key, title in ROWS:
        step = res.steps.get(key)
        if step is None:
            continue
        target, ratio = targets.get(key), kustomize_ratio(res, key)
        met = target.judge(step, ratio) if target else None
        result = verdict(met)
        if target and target.kustomize_ratio and ratio:
            result += f" ({ratio:.1f}×)"
        wall = fmt_s(step.seconds) if step.seconds is not None else "not run"
        if step.note and not (step.ok and key.startswith("kustomize.")):
            wall += f" ({step.note})"
        rows.append([size, _title(res, key, title), wall, fmt_rss(step.max_rss), yardsticks(res, key),
                     target.describe() if target else "—", result])
    return rows


def targets_missed(results: list[SizeResult]) -> bool:
    return any(row[-1].startswith(verdict(False)) for res in results for row in rows_for(res))


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def side_by_side(results: list[SizeResult]) -> list[list[str]]:
    """One line per fleet and size: the full runs, their anchors, and the ratios."""
    rows = []
    for res in results:
        ratio = kustomize_ratio(res, "worktree.full")
        anchor, checkout = _seconds(res, "checkout.git_checkout"), _seconds(res, "checkout.full")
        rows.append([f"{res.wecs:,} × {res.objects}, {res.fleet}", fmt_s(_seconds(res, "bare.full")),
                     fmt_s(_seconds(res, "worktree.full")), fmt_s(checkout), fmt_s(anchor),
                     f"{checkout / anchor:.1f}×" if checkout and anchor else "—",
                     fmt_s(_seconds(res, "kustomize.all")), f"{ratio:.1f}×" if ratio else "—"])
    return rows


def floors_rows(floors: dict[str, Step]) -> list[list[str]]:
    return [[title, fmt_s(floors[key].seconds) if floors[key].ok else f"failed ({floors[key].note})",
             fmt_rss(floors[key].max_rss)] for key, title in FLOORS if key in floors]


def report(results: list[SizeResult], floors: dict[str, Step], header: list[str]) -> str:
    lines = [*header, ""]
    if floors:
        lines += ["### Floors: the interpreter's start-up, the file system's pace (median of 5)", "",
                  table(["command", "wall time", "peak RSS"], floors_rows(floors)), ""]
    lines += ["### Every row", "",
              table(["size (WECs × objects), fleet", "measurement", "wall time", "peak RSS",
                     "yardsticks (same run)", "target", "result"], [r for res in results for r in rows_for(res)]),
              "", "### Full runs side by side", "",
              table(["size, fleet", "bare full", "work-tree full", "checkout full (--commit)", "`git checkout`",
                     "checkout ÷ `git checkout`", "kustomize, every overlay", "kustomize ÷ work-tree full"],
                    side_by_side(results)),
              "", "Targets apply at 1,000 × 200 and 10,000 × 200 (other sizes show —); a ratio target is "
              "judged only when kustomize ran in the same run."]
    checks = [(res, c) for res in results for c in res.checks]
    if checks:
        lines += ["", "### Checks passed", ""]
        lines += [f"- {res.wecs}×{res.objects} {res.fleet} {c}" for res, c in checks]
    problems = [(res, p) for res in results for p in res.problems]
    if problems:
        lines += ["", "### Problems", ""]
        for res, p in problems:
            first, *rest = p.splitlines()
            lines.append(f"- {res.wecs}×{res.objects} {res.fleet} {first}")
            if rest:
                lines += ["  ```", *("  " + r for r in rest), "  ```"]
    return "\n".join(lines) + "\n"
