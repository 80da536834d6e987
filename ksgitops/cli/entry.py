"""The `ksgitops` program: a command is handed to the work tree's monitor when one runs the same
code (io/fs/handoff.py: no start-up, no imports), else it runs here (cli/commands.py)."""
from __future__ import annotations

import gc
import sys

# A run allocates millions of small objects and makes almost no reference cycles: collecting the
# youngest generation every 700 allocations cost ~13% of a full reconcile (1,000 WECs), and ~6 ms of
# the imports, which come first and make ~36,000 objects and no garbage.
GC_THRESHOLD = (100_000, 50, 100)
gc.set_threshold(*GC_THRESHOLD)

from ..io.fs.handoff import hand_off  # noqa: E402 - loaded under the threshold above

# What a handed-over command would import: the monitor loads it once, its workers inherit it.
PRELOADED = ("ksgitops.cli.commands", "ksgitops.app.usecases", "ksgitops.app.status", "ksgitops.core.pipeline",
             "ksgitops.core.readout.diff", "ksgitops.core.emit.files", "ksgitops.io.fs.worktree",
             "ksgitops.io.fs.proof", "ksgitops.schema", "yaml", "orjson", "jsonpatch", "jsonschema",
             "referencing", "pygit2", "ksgitops.app.monitor")


def main() -> None:
    code = hand_off(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from ..io.fs import afterwards
    from .commands import main as run_here
    afterwards.as_program()
    afterwards.leave(afterwards.exit_code(run_here))


def run(args: list[str]) -> None:
    """A command line run in this process (a monitor's worker runs its asker's this way)."""
    from .commands import main as run_here
    run_here(args)


def preload() -> None:
    import gc
    import importlib
    for name in PRELOADED:
        importlib.import_module(name)
    for name in [n for n in sys.modules if n.startswith("ksgitops.")]:
        vars(sys.modules[name])  # executed: a room the use cases load on first use (ksgitops/lazy.py) too
    from ..io.git.cache import code_fingerprint
    code_fingerprint()  # the package's files are as the monitor's stamp says, or it runs no command
    from ..core.load.schemas import compile_all
    compile_all()
    gc.freeze()  # the workers' collections then leave the loaded code's pages shared with the monitor
