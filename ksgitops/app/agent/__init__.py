"""The WEC-side use cases: `collect` (pull reported state from reachable WECs into the work tree)
and `sync` (the agent beside one WEC: apply its mailbox, prune, report, upsync, push to its ref).

They compose the edges (io/kube.py, io/git/reportref.py, io/fs/tree.py) with pure pieces; the CLI
maps the outcomes to output and exit codes. Both commands write reported state the same way
(`report_tree`): `reported/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml` holding
`{object: {apiVersion, kind, namespace, name, generation}, status, reportedAt}` (docs/REFERENCE.md,
"Reported state") — the object's `status` only: a Secret's data never reaches a report, a log or
an error. `reportedAt` is the collection time (UTC, seconds), but a report whose object identity,
generation and status are unchanged keeps its previous bytes, so repeated collections of a steady
fleet change nothing in git.

desired.py (what a mailbox sends, read back), collect.py, inventory.py (what the agent applied),
apply.py (plan, then act), upsync.py (what a WEC sends back), sync.py (the agent's cycle).
"""
from .apply import Act, ApplyOutcome, MailboxPlan, Step, apply_mailbox, plan_mailbox, plan_phase
from .upsync import upsync_tree
from .collect import CollectOutcome, collect, wec_context
from .desired import (CONTEXT_ANNOTATION, CREATE_ONLY_ANNOTATION, FIELD_MANAGER, INVENTORY_NAMESPACE, Desired,
                      desired_objects, read_live, report_document, report_tree)
from .inventory import Entry, Inventory, InventoryError, contains, load_inventory, save_inventory, shape
from .sync import Agent, CycleOutcome, SyncOptions, check_mailbox_name

__all__ = ["Act", "ApplyOutcome", "MailboxPlan", "plan_mailbox", "Step", "apply_mailbox", "plan_phase", "upsync_tree", "CollectOutcome", "collect",
           "wec_context", "CONTEXT_ANNOTATION", "CREATE_ONLY_ANNOTATION", "FIELD_MANAGER", "INVENTORY_NAMESPACE",
           "Desired", "desired_objects", "read_live", "report_document", "report_tree", "Entry", "Inventory",
           "InventoryError", "contains", "load_inventory", "save_inventory", "shape", "Agent", "CycleOutcome",
           "SyncOptions", "check_mailbox_name"]
