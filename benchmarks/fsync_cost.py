"""What durability costs: write N small files in F folders (a mailbox-like layout) and make them
durable four ways, each timed from a cold start (a fresh folder):

    none        no fsync at all (what a kill needs: the page cache survives the process)
    per-file    fsync every file and every folder (what a naive writer does)
    per-folder  fsync each folder's files, then the folder (batched by folder)
    syncfs      one syncfs(2) of the file system after everything is written (what ksgitops does)

Usage: python benchmarks/fsync_cost.py [--files 20000] [--folders 100] [--size 600] [--dir DIR]
Prints a Markdown table (seconds, and microseconds per file). Run it on an idle machine: on a
shared one the sync figures include other processes' dirty pages.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ksgitops.io.fs.durable import sync_filesystem  # noqa: E402


def write_files(root: Path, files: int, folders: int, size: int, fsync_each: bool) -> list[str]:
    made = []
    data = b"x" * size
    for f in range(folders):
        folder = root / f"mb-{f:04d}"
        os.mkdir(folder)
        made.append(str(folder))
        for i in range(files // folders):
            fd = os.open(f"{folder}/obj-{i:05d}.yaml", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                if fsync_each:
                    os.fsync(fd)
            finally:
                os.close(fd)
        if fsync_each:
            _fsync_dir(str(folder))
    return made


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: str) -> None:
    for entry in os.scandir(folder):
        fd = os.open(entry.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    _fsync_dir(folder)


def run(mode: str, base: Path, files: int, folders: int, size: int) -> float:
    root = base / mode
    os.mkdir(root)
    sync_filesystem(base)  # start with nothing dirty of ours
    start = time.perf_counter()
    made = write_files(root, files, folders, size, fsync_each=mode == "per-file")
    if mode == "per-folder":
        for folder in made:
            _fsync_folder(folder)
        _fsync_dir(str(root))
    elif mode == "syncfs":
        sync_filesystem(root)
    elif mode == "per-file":
        _fsync_dir(str(root))
    elapsed = time.perf_counter() - start
    shutil.rmtree(root)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--folders", type=int, default=100)
    parser.add_argument("--size", type=int, default=600, help="bytes per file")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary folder)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ksgitops-fsync-", dir=args.dir))
    try:
        print(f"{args.files} files of {args.size} bytes in {args.folders} folders, under {base}\n")
        print("| mode | seconds | µs per file |\n|---|---|---|")
        for mode in ("none", "syncfs", "per-folder", "per-file"):
            seconds = run(mode, base, args.files, args.folders, args.size)
            print(f"| {mode} | {seconds:.3f} | {seconds / args.files * 1e6:.1f} |", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
