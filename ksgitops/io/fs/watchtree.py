"""A work tree's folders under inotify watches, turned into the paths that changed.

Every folder of the work tree (but the git directory and the writer's staging siblings) has a watch;
each event names a folder's entry, so it becomes the path `folder/name`, or the folder itself. The
watched folders are kept as a tree of nodes (name, parent), not a map of paths: a renamed folder
moves with its whole subtree in one step, and a path is always its parents' names as they are now.

- A folder created or moved in gets its watch and every folder below it is walked and watched
  (what was created in it before its watch existed is covered: the folder itself is reported, and
  a changed folder stands for everything below it).
- A folder moved out, or renamed to a name that is not watched (a root moved aside as trash),
  drops its subtree's watches; one deleted drops them as the kernel reports each (IN_IGNORED).
- The kernel's queue overflowing (IN_Q_OVERFLOW) loses events: `Overflow` is raised, and the caller
  starts again with new watches and a new history. So does a rename whose folder is not the one
  found at its new name (each watch knows its folder's inode): new folders are watched as they
  are found on disk, which can be ahead of the events still queued, and a name reused meanwhile
  would otherwise put one folder's watch under another's path.

inotify reports an event inside the system call that made the change, so once the queue has been
read to its end, every change made before that moment has been seen (`drain`). Blind spots are
inotify's own: a file changed through a hard link from outside the work tree, writes through a
shared memory map, and changes made on another machine to a network file system.
"""
from __future__ import annotations

import errno
import os
from typing import Callable

from inotify_simple import INotify, flags

from .feed import unwatched
from .paths import has_other_names

MASK = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.MOVED_FROM | flags.MOVED_TO
        | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR)
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # not there, or not a folder (any more)
class Overflow(Exception):
    """Events were lost, or cannot be placed: nothing seen before can vouch."""


class CannotWatch(Exception):
    """The work tree cannot be watched as a whole: the monitor stops, and runs look at everything."""


class TooManyFolders(CannotWatch):
    """The kernel refused another watch (fs.inotify.max_user_watches)."""


class _Node:
    __slots__ = ("wd", "ino", "name", "parent", "children")

    def __init__(self, wd: int, ino: int, name: str, parent: _Node | None) -> None:
        self.wd, self.ino, self.name, self.parent = wd, ino, name, parent
        self.children: dict[str, _Node] = {}


class WatchTree:
    """The watched folders below `root` (`skip(path)`: a folder never watched, the git directory)."""

    def __init__(self, root: str, skip: Callable[[str], bool]) -> None:
        self.root, self.skip = root.rstrip("/") or "/", skip
        self.inotify = INotify(nonblocking=True)
        self.nodes: dict[int, _Node] = {}
        self._moved: dict[int, _Node] = {}  # cookie -> a folder moved from its place, not yet seen arriving
        # a folder entry not watched when told of it (gone from the path known then, maybe as a parent's
        # rename is further down the queue; or unreadable): tried again after each drain, and named
        # in every drain's answer until it is watched or its removal is read
        self.unsure: dict[tuple[int, str], _Node] = {}
        self.unwalked: set[_Node] = set()  # a folder whose listing failed at the path known then
        top = self._add(self.root, None, "")
        if top is None:
            raise FileNotFoundError(errno.ENOENT, "no such folder", self.root)
        self.top = top
        self._walk(top, links=False)

    def close(self) -> None:
        self.inotify.close()

    @property
    def folders(self) -> int:
        return len(self.nodes)

    def fileno(self) -> int:
        return self.inotify.fileno()

    def path(self, node: _Node) -> str:
        names = []
        while node.parent is not None:
            names.append(node.name)
            node = node.parent
        return "/".join(reversed(names))

    def _abs(self, node: _Node) -> str:
        rel = self.path(node)
        return f"{self.root}/{rel}" if rel else self.root

    def _add(self, path: str, parent: _Node | None, name: str) -> _Node | None:
        """Watch the folder at `path` now, knowing which one it is (its inode: the watch is put on
        the folder opened, never on a link, nor on another folder renamed there meanwhile)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            self._unwatchable(e, parent, name)
            return None  # gone, or not a folder (any more): its parent's watch reports that
        try:
            ino = os.fstat(fd).st_ino
            wd = self.inotify.add_watch(f"/proc/self/fd/{fd}", MASK)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise TooManyFolders(f"{len(self.nodes)} folders are watched and the kernel allows no more "
                                     "(fs.inotify.max_user_watches)") from None
            self._unwatchable(e, parent, name)
            return None
        finally:
            os.close(fd)
        node = self.nodes.get(wd)
        if node is not None and (node.parent is not parent or node.name != name):
            if (node.parent is not None or node is self.top) and _inode(self._abs(node)) == ino:
                raise CannotWatch(f"{path}: the same folder as {self._abs(node)} (a bind mount?): "
                                  "a change in one would be reported at the other")
            self._drop(node)  # seen at another place: its old subtree's paths are stale
            return self._add(path, parent, name)
        if node is None:
            node = self.nodes[wd] = _Node(wd, ino, name, parent)
        if parent is not None:
            parent.children[name] = node
        return node

    def _unwatchable(self, error: OSError, parent: _Node | None, name: str) -> None:
        if parent is not None:
            self.unsure[(parent.wd, name)] = parent

    def _walk(self, node: _Node, links: bool = True) -> None:
        """Watch every folder below `node` (already watched); with `links`, a file with another
        name found there (moved in with its folder) starts a new history, as a link made would."""
        stack = [node]
        while stack:
            folder = stack.pop()
            base = self._abs(folder)
            try:
                found = list(os.scandir(base))
            except OSError:
                self.unwalked.add(folder)
                continue
            if links and any(_linked(e) for e in found):
                raise Overflow(f"{base}: a file with another name arrived: changes through it would not be reported")
            entries = [e.name for e in found if e.is_dir(follow_symlinks=False)]
            for name in entries:
                path = f"{base}/{name}"
                if unwatched(name) or self.skip(path):
                    continue
                child = self._add(path, folder, name)
                if child is not None:
                    stack.append(child)

    def _detach(self, node: _Node) -> None:
        if node.parent is not None and node.parent.children.get(node.name) is node:
            del node.parent.children[node.name]
        node.parent = None

    def _drop(self, node: _Node) -> None:
        """Stop watching `node` and everything below it."""
        self._detach(node)
        stack = [node]
        while stack:
            folder = stack.pop()
            stack.extend(folder.children.values())
            if self.nodes.pop(folder.wd, None) is not None:
                try:
                    self.inotify.rm_watch(folder.wd)
                except OSError:
                    pass  # the kernel dropped it already

    def drain(self) -> list[str]:
        """Read the queue to its end: the paths changed since the last call (relative, "/"-joined;
        "" is the work tree itself)."""
        changed: list[str] = []
        while events := self.inotify.read(timeout=0):
            changed.extend(self._apply(events))
        for node in self._moved.values():  # moved out of the work tree
            self._drop(node)
        self._moved.clear()
        return changed + self._try_again()

    def _try_again(self) -> list[str]:
        """Watch what could not be watched when told of it, now from where its parent is; what still
        cannot be is named changed."""
        unsure, self.unsure = self.unsure, {}
        for (wd, name), parent in unsure.items():
            if self.nodes.get(wd) is parent and name not in parent.children:
                child = self._add(f"{self._abs(parent)}/{name}", parent, name)
                if child is not None:
                    self._walk(child)
        unwalked, self.unwalked = self.unwalked, set()
        for node in unwalked:
            if self.nodes.get(node.wd) is node:
                self._walk(node)
        return [f"{self.path(parent)}/{name}".lstrip("/") for (_, name), parent in self.unsure.items()] + \
            [self.path(node) for node in self.unwalked]

    def _apply(self, events: list) -> list[str]:
        changed = []
        for wd, mask, cookie, name in events:
            if mask & flags.Q_OVERFLOW:
                raise Overflow("the kernel's event queue overflowed")
            node = self.nodes.get(wd)
            if node is None or node.parent is None and node is not self.top:
                continue  # a watch already dropped (moved out, renamed aside): its events are stale
            if mask & flags.IGNORED:
                self.nodes.pop(wd, None)
                self._detach(node)
                continue
            where = self.path(node)
            if not name:  # the folder itself (its attributes, or it went)
                changed.append(where)
                continue
            path = f"{where}/{name}" if where else name
            changed.append(path)
            if mask & flags.ISDIR:
                self._folder_event(node, name, mask, cookie)
            elif mask & (flags.CREATE | flags.MOVED_TO) and has_other_names(f"{self._abs(node)}/{name}"):
                raise Overflow(f"{path}: a hard link: a change through its other names would not be reported")
        return changed

    def _folder_event(self, parent: _Node, name: str, mask: int, cookie: int) -> None:
        if mask & (flags.MOVED_FROM | flags.DELETE):
            self.unsure.pop((parent.wd, name), None)  # its removal read: nothing left to try
        if mask & flags.MOVED_FROM:
            child = parent.children.get(name)
            if child is not None:
                self._detach(child)
                self._moved[cookie] = child
            return
        if not mask & (flags.CREATE | flags.MOVED_TO):
            return
        moved = self._moved.pop(cookie, None) if mask & flags.MOVED_TO else None
        path = f"{self._abs(parent)}/{name}"
        if unwatched(name) or self.skip(path):
            if moved is not None:
                self._drop(moved)
            return
        if moved is not None:  # renamed within the work tree: the subtree keeps its watches
            if _inode(path) != moved.ino:  # the folder there now is another: the queue is behind the disk
                raise Overflow(f"{path}: not the folder the rename event names (changed since)")
            old = parent.children.get(name)
            if old is not None and old is not moved:
                self._drop(old)
            moved.name, moved.parent = name, parent
            parent.children[name] = moved
            return
        child = self._add(path, parent, name)
        if child is not None:
            self._walk(child)


def _inode(path: str) -> int:
    try:
        return os.lstat(path).st_ino
    except OSError:
        return -1


def _linked(entry: os.DirEntry[str]) -> bool:
    """A file with more than one name (one gone since the listing has none: its removal is queued)."""
    try:
        return entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink > 1
    except OSError:
        return False
