"""The space manager: plans with core.place.spaces and applies the actions through the providers."""
from __future__ import annotations

from typing import Sequence

from msgspec import Struct, field

from ...core.place.spaces import CREATE_SPACE, DELETE_OBJECT, DELETE_SPACE, SET_PHASE, WRITE_OBJECT, Action, Observed, Plan, ProviderDesc, plan
from ...model import KsgitopsError

from .base import Provider, ProviderError, describe
from .stores import SpaceStore


class Applied(Struct):
    """What one pass of the manager did: actions done, failed (with the error) and skipped (a
    previous action for the same space failed)."""

    plan: Plan
    done: list[Action] = field(default_factory=list)
    failed: list[tuple[Action, str]] = field(default_factory=list)
    skipped: list[Action] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed


class SpaceManager:
    """Plans with the pure state machine and applies the plan through the providers and a store.

    `descs` default to each provider's own (name, type, prefix)."""

    def __init__(self, providers: Sequence[Provider], store: SpaceStore,
                 descs: Sequence[ProviderDesc] | None = None) -> None:
        self.providers = {p.name: p for p in providers}
        self.store = store
        self.descs = list(descs) if descs is not None else [describe(p) for p in providers]

    def observe(self) -> dict[str, list[Observed] | None]:
        """Each provider's listing, None for a provider that cannot be reached."""
        observed: dict[str, list[Observed] | None] = {}
        for name, provider in self.providers.items():
            try:
                observed[name] = provider.list()
            except (ProviderError, OSError):
                observed[name] = None
        return observed

    def plan(self) -> Plan:
        return plan(self.store.list(), self.descs, self.observe())

    def apply(self, p: Plan) -> Applied:
        result = Applied(p)
        broken: set[str] = set()
        for action in p.actions:
            if action.space in broken:
                result.skipped.append(action)
                continue
            try:
                self._do(action)
                result.done.append(action)
            except (KsgitopsError, OSError) as e:
                broken.add(action.space)
                result.failed.append((action, str(e)))
        return result

    def reconcile(self) -> Applied:
        return self.apply(self.plan())

    def _do(self, action: Action) -> None:
        provider = self.providers.get(action.provider)
        if action.op in (CREATE_SPACE, DELETE_SPACE) and provider is None:
            raise ProviderError(f"no provider {action.provider} to {action.op} {action.space}")
        if action.op == CREATE_SPACE:
            provider.create(action.space)  # type: ignore[union-attr]
        elif action.op == DELETE_SPACE:
            provider.delete(action.space)  # type: ignore[union-attr]
        elif action.op == DELETE_OBJECT:
            self.store.delete(action.space)
        elif action.op == WRITE_OBJECT:
            self.store.write(action.space_obj())
        elif action.op == SET_PHASE:
            self.store.set_phase(action.space, action.phase)
