"""`diff` when generated files change but no WEC would receive different objects: it exits 1, as
reconcile would write, and says which generated folders and files (it said only "0 WECs affected")."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable


def test_a_placement_record_that_reconcile_would_write_anew_is_named(example: Path, cli: Callable[..., Any]) -> None:
    assert cli("reconcile", str(example)).code == 0
    records = example / "spaces/wmw-c/.ksgitops/placements"
    assert records.is_dir()
    shutil.rmtree(records)
    done = cli("diff", str(example))
    assert done.code == 1, done
    assert done.out.splitlines()[-2:] == [
        "1 generated folder or file would change without a WEC receiving different objects: "
        "spaces/wmw-c/.ksgitops/placements", "0 WECs affected"]
    as_json = json.loads(cli("diff", str(example), "-o", "json").out)
    assert as_json["changed"] is True and as_json["affectedWecs"] == []
    assert as_json["generatedOnly"] == ["spaces/wmw-c/.ksgitops/placements"]


def test_nothing_changed_names_nothing(example: Path, cli: Callable[..., Any]) -> None:
    assert cli("reconcile", str(example)).code == 0
    done = cli("diff", str(example))
    assert done.code == 0 and done.out.splitlines()[-1] == "0 WECs affected", done
    assert json.loads(cli("diff", str(example), "-o", "json").out)["generatedOnly"] == []
