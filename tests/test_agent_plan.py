"""The agent decides before it acts: `plan_phase` is a pure function from the mailbox's objects,
their live copies and the agent's inventory to one typed step per object (app/agent/apply.py)."""
from __future__ import annotations

import copy

from ksgitops.app.agent import CREATE_ONLY_ANNOTATION, Act, Desired, Entry, plan_phase, shape

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}}


def desired(body: dict, name: str = "a") -> Desired:
    return Desired(f"core/configmaps/ns/{name}", body)


def live_of(body: dict, uid: str = "u1", **extra: object) -> dict:
    found = copy.deepcopy(body)
    found["metadata"] = {**found["metadata"], "uid": uid, "resourceVersion": "7", **extra}
    return found


def test_each_object_gets_the_step_its_data_calls_for() -> None:
    create_only = copy.deepcopy(CM)
    create_only["metadata"]["annotations"] = {CREATE_ONLY_ANNOTATION: "false"}
    objects = [desired(CM, "steady"), desired(CM, "changed"), desired(CM, "absent"), desired(CM, "foreign"),
               desired(create_only, "new-once"), desired(create_only, "old-once"), desired(CM, "broken")]
    edited = live_of(CM)
    edited["data"] = {"k": "edited on the WEC"}
    live = {"core/configmaps/ns/steady": live_of(CM), "core/configmaps/ns/changed": edited,
            "core/configmaps/ns/absent": None, "core/configmaps/ns/foreign": live_of(CM, uid="u9"),
            "core/configmaps/ns/new-once": None, "core/configmaps/ns/old-once": live_of(create_only)}
    recorded = Entry("v1", "ConfigMap", "u1", shape(CM))
    inventory = {"core/configmaps/ns/steady": recorded, "core/configmaps/ns/changed": recorded}
    errors = {"core/configmaps/ns/broken": f"{objects[-1]}: forbidden"}  # as read_live names it
    steps = {s.desired.rel.rsplit("/", 1)[1]: s for s in plan_phase(objects, live, errors, inventory)}
    assert {name: s.action for name, s in steps.items()} == {
        "steady": Act.UNCHANGED, "changed": Act.APPLY, "absent": Act.APPLY, "foreign": Act.APPLY,
        "new-once": Act.CREATE, "old-once": Act.KEEP, "broken": Act.UNREADABLE}
    assert steps["broken"].reason == "forbidden" and steps["absent"].reason == "absent"
    assert steps["foreign"].reason == "not applied by the agent yet"


def test_a_plan_holds_no_secret_data_and_reads_nothing_but_its_inputs() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "data": {"password": "c2VjcmV0"}}
    d = Desired("core/secrets/ns/s", secret)
    [step] = plan_phase([d], {d.rel: None}, {}, {})
    assert step.action is Act.APPLY and "c2VjcmV0" not in step.reason
    assert plan_phase([d], {d.rel: None}, {}, {}) == [step], "the same inputs give the same plan"
