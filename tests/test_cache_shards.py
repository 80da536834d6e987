"""The local cache is split into shards by what its entries belong to: a run that read a few new
files rewrites the shards holding them, every other shard stays as it was, and whatever happens
to the files (a kill between shard writes, a shard of another generation, a damaged shard, two
writers) costs time only, never a wrong entry."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ksgitops.io.git.cache import SHARDS, DiskCache, shard_name, shard_of


def value_of(key: object) -> str:
    return f"value of {key!r} " * 4  # content-keyed: an entry's value follows from its key


def blob(i: int) -> str:
    return f"{i:040x}"


def keys_of_a_file(i: int) -> list[object]:
    """A parse result and its checks, as the loader keys them: one shard holds them all."""
    return [blob(i), ("validate", blob(i), 1), ("validate", blob(i), 2), ("schema-findings-of", blob(i))]


def fill(path: Path, files: range, mailboxes: dict[str, tuple[str, str]] | None = None) -> None:
    cache = DiskCache(path)
    for i in files:
        for key in keys_of_a_file(i):
            cache.content[key] = value_of(key)
    cache.save(mailboxes or {})


def use_all(path: Path) -> DiskCache:
    cache = DiskCache(path)
    for key in list(cache.content):
        cache.content[key]  # noqa: B018 - used by this run
    return cache


def shard_bytes(path: Path) -> dict[int, bytes]:
    return {i: path.with_name(shard_name(i)).read_bytes() for i in range(SHARDS)}


def test_a_file_and_its_checks_share_a_shard_and_shards_are_used_evenly() -> None:
    assert all(len({shard_of(k) for k in keys_of_a_file(i)}) == 1 for i in range(100))
    counts = [0] * SHARDS
    for i in range(1600):
        counts[shard_of(blob(i))] += 1
    assert min(counts) > 50


def test_a_run_that_read_one_new_file_rewrites_only_its_shard(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(400), {"mb-a": ("d", "t")})
    before, index = shard_bytes(path), path.read_bytes()
    cache = DiskCache(path)
    for key in list(cache.content):
        if key not in keys_of_a_file(7):  # one file's entries unused: left in place
            cache.content[key]  # noqa: B018
    for key in keys_of_a_file(1000):
        cache.content[key] = value_of(key)
    cache.save({"mb-a": ("d", "t")})
    after = shard_bytes(path)
    assert {i for i in range(SHARDS) if after[i] != before[i]} == {shard_of(blob(1000))}
    assert path.read_bytes() == index  # the mailboxes did not change
    again = DiskCache(path)
    expected = {k for i in [*range(400), 1000] if i != 7 or shard_of(blob(7)) != shard_of(blob(1000))
                for k in keys_of_a_file(i)}
    assert set(again.content) == expected and all(again.content[k] == value_of(k) for k in expected)
    assert again.mailboxes == {"mb-a": ("d", "t")}


def test_a_shard_mostly_unused_is_written_without_what_went_unused(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(400))
    before = shard_bytes(path)
    kept = [i for i in range(400) if shard_of(blob(i)) != 3 or i % 4 == 0]  # shard 3 keeps about a quarter
    cache = DiskCache(path)
    for i in kept:
        for key in keys_of_a_file(i):
            cache.content[key]  # noqa: B018
    cache.save({})
    after = shard_bytes(path)
    assert {i for i in range(SHARDS) if after[i] != before[i]} == {3}
    assert set(DiskCache(path).content) == {k for i in kept for k in keys_of_a_file(i)}


def test_a_run_that_changed_nothing_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(100))
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    use_all(path).save({})
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps


def test_a_new_mailbox_entry_rewrites_the_index_only(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(100), {"mb-a": ("d", "t")})
    before = shard_bytes(path)
    use_all(path).save({"mb-a": ("d2", "t2"), "mb-b": ("d", "t")})
    assert shard_bytes(path) == before
    assert DiskCache(path).mailboxes == {"mb-a": ("d2", "t2"), "mb-b": ("d", "t")}


@pytest.mark.parametrize("damage", ["index removed", "index damaged", "shard damaged", "shard removed"])
def test_damage_costs_entries_never_correctness(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(200), {"mb-a": ("d", "t")})
    victim = path.with_name(shard_name(shard_of(blob(3))))
    if damage == "index removed":
        path.unlink()
    elif damage == "index damaged":
        path.write_bytes(b"not a pickle")
    elif damage == "shard damaged":
        victim.write_bytes(victim.read_bytes()[:50])
    else:
        victim.unlink()
    cache = use_all(path)
    assert all(value == value_of(key) for key, value in cache.content.items())
    if damage.startswith("index"):
        assert not cache.content and not cache.mailboxes  # a cold run
    else:
        assert blob(3) not in cache.content and cache.mailboxes == {"mb-a": ("d", "t")}
        assert len(cache.content) > 100 * 4
    for key in keys_of_a_file(3):
        cache.content[key] = value_of(key)
    cache.save({"mb-a": ("d", "t")})
    assert blob(3) in DiskCache(path).content


def test_shards_of_an_older_generation_are_never_read(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(100))
    old = shard_bytes(path)
    path.unlink()
    fill(path, range(500, 600))  # a cold run: a new generation
    victim = shard_of(blob(500))
    path.with_name(shard_name(victim)).write_bytes(old[victim])
    cache = DiskCache(path)
    assert not any(blob(i) in cache.content for i in range(100))
    assert blob(500) not in cache.content


def test_a_long_running_caller_drops_what_it_stopped_using(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(200))
    cache = use_all(path)
    cache.save({})
    cache.next_run()
    kept = [i for i in range(200) if shard_of(blob(i)) < SHARDS // 2]  # half the shards go unused
    for i in kept:
        for key in keys_of_a_file(i):
            cache.content[key]  # noqa: B018
    cache.save({})
    assert set(DiskCache(path).content) == {k for i in kept for k in keys_of_a_file(i)}


def _writer(path: str, first: int, start: "multiprocessing.synchronize.Event") -> None:
    start.wait()
    for round in range(30):
        cache = use_all(Path(path))
        for i in range(first + round * 3, first + round * 3 + 3):
            for key in keys_of_a_file(i):
                cache.content[key] = value_of(key)
        cache.save({f"mb-{first}": (f"d{round}", "t")})


def test_two_writers_racing_leave_only_right_entries(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(300))
    context = multiprocessing.get_context("fork")
    start = context.Event()
    writers = [context.Process(target=_writer, args=(str(path), first, start)) for first in (10_000, 20_000)]
    for writer in writers:
        writer.start()
    start.set()
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    final = DiskCache(path)
    assert all(value == value_of(key) for key, value in final.content.items())
    assert all(v[1] == "t" for v in final.mailboxes.values())


WRITER = """
import sys
from pathlib import Path
from ksgitops.io.git.cache import DiskCache
sys.path.insert(0, sys.argv[2])
from test_cache_shards import keys_of_a_file, use_all, value_of
path = Path(sys.argv[1])
for round in range(10**6):
    cache = use_all(path)
    for i in range(100_000 + round * 20, 100_000 + round * 20 + 20):
        for key in keys_of_a_file(i):
            cache.content[key] = value_of(key) * 50
    if round % 7 == 0:  # now and then a cold run: every shard and the index anew
        path.unlink(missing_ok=True)
        cache = DiskCache(path)
        cache.content[keys_of_a_file(5)[0]] = value_of(keys_of_a_file(5)[0])
    cache.save({"mb": (str(round), "t")})
"""


def test_a_writer_killed_at_any_moment_leaves_only_right_entries(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    fill(path, range(2000))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    for delay in (0.2, 0.35, 0.5, 0.65, 0.8):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(Path(__file__).parent)], env=env)
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        cache = DiskCache(path)
        for key, value in cache.content.items():
            assert value in (value_of(key), value_of(key) * 50), key
