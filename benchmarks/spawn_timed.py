"""Run one command; write its wall time, peak RSS and exit status as JSON. Used by the harness.

    python -S spawn_timed.py RESULT.json TIMEOUT_SECONDS CMD [ARGS...]

Why a separate small process: on Linux a child's ``ru_maxrss`` starts from the peak RSS of the
process that forked it (exec keeps the old address space's high-water mark), so a command forked
by the harness, which holds fleets and file listings, would report at least the harness's memory.
This script imports nothing heavy before it forks, so what it reports is the command's own peak
(floor: this script's few MiB). The command runs in its own session; on timeout the whole
session is killed.
"""
import os
import signal
import sys
import time


def main() -> int:
    result_path, timeout, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.execvp(argv[0], argv)
        except OSError as e:
            os.write(2, f"spawn_timed: cannot run {argv[0]}: {e}\n".encode())
        os._exit(127)
    expired = []

    def expire(signum: int, frame: object) -> None:
        expired.append(True)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - started
    signal.setitimer(signal.ITIMER_REAL, 0)
    import json
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump({"seconds": seconds, "max_rss": usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024),
                   "exit_code": os.waitstatus_to_exitcode(status), "timed_out": bool(expired)}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
