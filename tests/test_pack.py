"""The pack writer: ids as git computes them, packs that git verifies and libgit2 reads."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from ksgitops.core.status.gitobjects import blob_id
from ksgitops.io.git.pack import TREE_MODE, object_id, tree_content, write_pack


@pytest.mark.parametrize("data", [b"", b"x", b"hello\n" * 1000, bytes(range(256)) * 100])
def test_blob_ids_match_git(data: bytes) -> None:
    assert object_id(b"blob", data) == pygit2.hash(data).raw
    assert blob_id(data) == str(pygit2.hash(data))  # what a work tree's sources are keyed by


def test_pack_is_verified_by_git_and_read_by_libgit2(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    blobs = {object_id(b"blob", d): (b"blob", d) for d in (b"a\n", b"b" * 70_000, b"")}
    a, big, empty = list(blobs)
    sub = tree_content([("big.yaml", 0o100644, big)])
    sub_id = object_id(b"tree", sub)
    # `x` sorts after `x.yaml` only because a folder compares as `x/`
    root = tree_content([("x", TREE_MODE, sub_id), ("x.yaml", 0o100644, a), ("e", 0o100644, empty)])
    objects = {**blobs, sub_id: (b"tree", sub), object_id(b"tree", root): (b"tree", root)}
    pack = write_pack(Path(repo.path) / "objects", objects)
    assert pack is not None
    subprocess.run(["git", "verify-pack", "-v", str(pack.with_suffix(".idx"))], check=True, capture_output=True)
    tree = repo[pygit2.Oid(raw=object_id(b"tree", root))]
    assert [e.name for e in tree] == ["e", "x.yaml", "x"]
    assert tree["x"].type == pygit2.GIT_OBJECT_TREE
    assert repo[repo[tree["x"].id]["big.yaml"].id].data == b"b" * 70_000
    subprocess.run(["git", "-C", repo.path, "fsck", "--strict"], check=True, capture_output=True)


def test_nothing_to_write_writes_nothing(tmp_path: Path) -> None:
    assert write_pack(tmp_path, {}) is None
    assert not (tmp_path / "pack").exists()


def test_consolidate_packs_bounds_their_number_and_loses_nothing(tmp_path: Path) -> None:
    import subprocess

    import pygit2

    from ksgitops.io.git.repo import TreeWriter, consolidate_packs
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    sig = pygit2.Signature("t", "t@e")
    parent: list[pygit2.Oid] = []
    for i in range(20):  # 20 commits: a pack of trees and blobs each, and a loose commit
        tree = TreeWriter(repo).apply(None, {f"d{i}": {"f.txt": f"content {i}\n".encode()}, "all": {"n": str(i).encode()}})
        parent = [repo.create_commit("refs/heads/main", sig, sig, f"c{i}", tree, parent)]
    packs = lambda: sorted((tmp_path / "r.git/objects/pack").glob("*.pack"))  # noqa: E731
    assert len(packs()) == 20
    moved = consolidate_packs(repo, most=4)
    assert moved > 20 and len(packs()) == 2  # the largest pack stays; all the others became one
    assert not [d for d in (tmp_path / "r.git/objects").iterdir() if len(d.name) == 2 and any(d.iterdir())]
    check = subprocess.run(["git", "-C", str(tmp_path / "r.git"), "fsck", "--strict"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    fresh = pygit2.Repository(str(tmp_path / "r.git"))
    head = fresh.references["refs/heads/main"].peel(pygit2.Commit)
    assert fresh[fresh[head.tree["d19"].id]["f.txt"].id].data == b"content 19\n"
    assert len(list(fresh.walk(head.id))) == 20
    assert consolidate_packs(fresh, most=4) == 0  # under the bound: nothing to do


def test_one_tree_writer_over_many_freed_trees_writes_each_as_given(tmp_path: Path) -> None:
    """The writer remembers trees by id(); a dict freed after one apply must not pass for the next
    one that Python places at the same address."""
    from ksgitops.io.git.repo import TreeWriter
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    writer = TreeWriter(repo)
    for i in range(200):
        tree_id = writer.apply(None, {"reported": {"apps": {f"n{i % 7}.yaml": f"report {i}\n".encode()}}})
        tree = repo[tree_id]
        leaf = repo[repo[repo[tree["reported"].id]["apps"].id][f"n{i % 7}.yaml"].id]
        assert leaf.data == f"report {i}\n".encode(), f"apply {i} wrote an earlier tree"


def _pack_objects(repo: pygit2.Repository) -> set[str]:
    found: set[str] = set()
    for idx in (Path(repo.path) / "objects" / "pack").glob("*.idx"):
        out = subprocess.run(["git", "show-index"], stdin=idx.open("rb"), check=True, capture_output=True, text=True).stdout
        found |= {line.split()[1] for line in out.splitlines()}
    return found


@pytest.mark.parametrize("old", [0, 3000, 5000])
def test_a_large_batch_writes_what_is_missing_and_at_most_duplicates(tmp_path: Path, old: int) -> None:
    """flush: a batch over PROBE_FROM objects is probed; whatever it decides, every object ends
    up readable, git verifies the packs, and a batch that is mostly old writes only the new."""
    from ksgitops.io.git.repo import PROBE_FROM, TreeWriter
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    contents = [f"object {i}\n".encode() * (1 + i % 7) for i in range(PROBE_FROM + 1000)]
    first = TreeWriter(repo)
    for data in contents[:old]:
        first._store(b"blob", data)
    first.flush()
    before = _pack_objects(repo)
    writer = TreeWriter(repo)
    for data in contents:
        writer._store(b"blob", data)
    writer.flush()
    written = _pack_objects(repo) - before
    for data in contents:
        assert repo[pygit2.Oid(raw=object_id(b"blob", data))].data == data
    for idx in (Path(repo.path) / "objects" / "pack").glob("*.idx"):
        subprocess.run(["git", "verify-pack", str(idx)], check=True, capture_output=True)
    if old > PROBE_FROM // 2:
        assert len(written) == len(contents) - old  # the probe met old objects: only the new ones
    else:
        assert len(written) >= len(contents) - old


@pytest.mark.parametrize("umask, mode", [(0o022, 0o444), (0o077, 0o400), (0o027, 0o440)])
def test_a_pack_is_read_only_and_as_private_as_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    """git makes a pack read-only under the umask (0444 masked); ksgitops made every pack 0444,
    readable by anyone on the machine whatever the user's umask said."""
    import os
    data = {object_id(b"blob", b"a\n"): (b"blob", b"a\n")}
    before = os.umask(umask)
    try:
        pack = write_pack(tmp_path, data)
    finally:
        os.umask(before)
    assert pack is not None
    assert [oct(p.stat().st_mode & 0o777) for p in (pack, pack.with_suffix(".idx"))] == [oct(mode)] * 2


def _probe(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a Python process of its own (its limits and signals its own), writing into `tmp_path`."""
    return subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})


def test_a_pack_that_cannot_be_written_raises_and_leaves_no_file(tmp_path: Path) -> None:
    """The pack is written and synced beside the index: its failure (here a file size limit, as on
    a full disk) is raised once both are done, and neither file nor temporary remains."""
    probe = (
        "import os, random, resource, sys\n"
        "from pathlib import Path\n"
        "from ksgitops.io.git.pack import write_pack, object_id\n"
        "big = random.Random(1).randbytes(200_000)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))\n"
        "try:\n"
        "    write_pack(Path(sys.argv[1]), {object_id(b'blob', big): (b'blob', big)})\n"
        "except OSError as e:\n"
        "    print('raised', e.errno)\n"
    )
    done = _probe(probe, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["raised", str(errno.EFBIG)]
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == []


def test_without_a_thread_to_be_had_the_pack_is_written_all_the_same(tmp_path: Path) -> None:
    """The pack is synced by a thread beside the index; where no thread can be started (here no
    room for its stack under the address-space limit, as under a limit on processes), both are
    written one after the other."""
    probe = (
        "import resource, sys, threading\n"
        "from pathlib import Path\n"
        "from ksgitops.io.git.pack import write_pack, object_id\n"
        "size = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmSize:')) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + (4 << 20), resource.RLIM_INFINITY))\n"
        "try:\n"
        "    threading.Thread(target=print).start()\n"
        "    print('a thread started')\n"
        "except RuntimeError:\n"
        "    pass\n"
        "print(write_pack(Path(sys.argv[1]), {object_id(b'blob', b'a\\n'): (b'blob', b'a\\n')}).name)\n"
    )
    done = _probe(probe, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "a thread started" not in done.stdout  # the limit holds: the fallback is what ran
    pack = tmp_path / "pack" / done.stdout.strip()
    subprocess.run(["git", "verify-pack", str(pack.with_suffix(".idx"))], check=True, capture_output=True)


def test_an_interrupt_while_the_pack_syncs_leaves_no_file(tmp_path: Path) -> None:
    """Ctrl-C while the index waits for the pack's thread (a slow disk's fsync, made slow here):
    the thread ends its write, then both temporary files go, and the interrupt is raised."""
    probe = (
        "import os, signal, sys, threading, time\n"
        "from pathlib import Path\n"
        "from ksgitops.io.git.pack import write_pack, object_id\n"
        "real = os.fsync\n"
        "def slow(fd):\n"
        "    if '.pack_' in os.readlink(f'/proc/self/fd/{fd}'):\n"
        "        time.sleep(1.5)\n"
        "    real(fd)\n"
        "os.fsync = slow\n"
        "threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    write_pack(Path(sys.argv[1]), {object_id(b'blob', b'a\\n'): (b'blob', b'a\\n')})\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    done = _probe(probe, tmp_path)
    assert done.stdout.split() == ["interrupted"], (done.stdout, done.stderr)
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == []
