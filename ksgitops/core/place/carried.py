"""Where, memoized and carried forward WEC by WEC.

A placement's destinations are memoized by its selectors and the inventory (`token`: the inventory
spaces' digests). When the inventory changed since they were last computed, only the WECs whose
SyncTarget or Locations changed (their `wec_prints` differ from the last run's) are matched again;
the others keep the destinations they had. `where.destinations` matches each Location's labels on
their own and each destination names its WEC, so the result is the full match's, in its order.
"""
from __future__ import annotations

import bisect
import hashlib
from typing import Any, MutableMapping

from ...model import object_digest
from .where import Candidates, Destination, Wec, destinations, in_order

WHERE = "where"
LAST = "where-last"  # (LAST, selectors) -> the token its destinations were last computed for
PRINTS = ("where-prints",)  # -> (token, the wec_prints of that inventory)
WecKey = tuple[str, str]  # a WEC's (space, SyncTarget name): what its destinations name


def wec_prints(wecs: dict[str, Wec]) -> dict[WecKey, bytes]:
    """Each WEC's content digest: its SyncTarget's and its Locations' (all a destination or a
    mailbox takes from the inventory)."""
    prints = {}
    for wec in wecs.values():
        digest = hashlib.blake2b(object_digest(wec.sync_target), digest_size=16)
        for location in wec.locations:
            digest.update(object_digest(location))
        prints[(wec.space, wec.name)] = digest.digest()
    return prints


class WhereMemo:
    """Destinations by (selectors, token) in `cache`; a miss is carried forward from the last
    token the selectors were computed for when that is the inventory the last prints describe."""

    def __init__(self, cache: MutableMapping[Any, Any], wecs: dict[str, Wec], token: str,
                 prints: dict[WecKey, bytes]) -> None:
        self.cache, self.wecs, self.token, self.prints = cache, wecs, token, prints
        self._before: tuple[str, dict[WecKey, bytes]] | None = None
        self._read = False
        self._changed: set[WecKey] | None = None
        self._again: dict[str, Wec] = {}  # the WECs of `_changed` still in the inventory
        self._candidates: Candidates | None = None  # made on the first full match

    def destinations(self, spec: dict[str, Any], selectors: bytes) -> tuple[Destination, ...]:
        self._keep_prints()
        last = self.cache.get((LAST, selectors))
        found = self.cache.get((WHERE, selectors, self.token))
        if found is None:
            found = self.cache[(WHERE, selectors, self.token)] = self._carried(spec, selectors, last)
        if last != self.token:
            self.cache[(LAST, selectors)] = self.token
        return found  # type: ignore[no-any-return]

    def _keep_prints(self) -> None:
        """Read the last prints once (which keeps them), and record this inventory's if it is new."""
        if self._read:
            return
        self._read = True
        before = self.cache.get(PRINTS)
        if before is None or before[0] != self.token:
            self._before = before
            self.cache[PRINTS] = (self.token, self.prints)

    def _carried(self, spec: dict[str, Any], selectors: bytes, last: str | None) -> tuple[Destination, ...]:
        old = self.cache.get((WHERE, selectors, last)) if last is not None else None
        changed = self._changed_since(last) if old is not None and last is not None else None
        if changed is None or old is None:
            if self._candidates is None:
                self._candidates = Candidates(self.wecs)
            return tuple(destinations(spec, self.wecs, self._candidates))
        kept = [d for d in old if (d.cluster, d.sync_target_name) not in changed]
        for dest in destinations(spec, self._again) if self._again else ():
            bisect.insort(kept, dest, key=in_order)
        return tuple(kept)

    def _changed_since(self, last: str) -> set[WecKey] | None:
        """The WECs whose prints differ from those of `last`'s inventory, or None when those
        prints are not kept or most WECs changed (a full match costs no more)."""
        if self._before is None or self._before[0] != last:
            return None
        if self._changed is None:
            before = self._before[1]
            self._changed = {k for k, p in self.prints.items() if before.get(k) != p} | (before.keys() - self.prints.keys())
            self._again = {mb: wec for mb, wec in self.wecs.items() if (wec.space, wec.name) in self._changed}
        return self._changed if len(self._changed) * 4 <= len(self.prints) else None
