"""Who is carrying out a request: an owner id that names one carrying-out in one process, and whether the process
behind an owner id is known to be gone.

An owner id is `host:pid:start/nonce`: the host and process id say where the work runs, the process's start (from
`/proc/<pid>/stat` on Linux, so a reused pid is another process) says which process that was, and the nonce tells
apart two carryings-out in one process (an approver's click and the jobs leader's reconciler share a process). The
store keeps it beside a lease expiry (`Store.take_over`, `Store.renew`); the reconciler takes a request over only
when that lease is over, or when `gone()` proves its process dead, which it can only on the same host.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid


def _started(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (field 22 of /proc/<pid>/stat); None where there is no
    /proc (not Linux), or no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces
    except OSError:
        return None
    return fields[19] if len(fields) > 19 else None


@functools.cache
def _process_id(pid: int) -> str:
    """`host:pid:start` of a process of this host (start `?` where it cannot be read); cached by pid, so a forked
    worker gets its own."""
    return f"{socket.gethostname()}:{pid}:{_started(pid) or '?'}"


def new_owner() -> str:
    """An owner id for one carrying-out in this process."""
    return f"{_process_id(os.getpid())}/{uuid.uuid4().hex[:8]}"


def gone(owner: str) -> bool:
    """True only when the process behind `owner` is known to have ended: on this host, no process with its pid, or one
    that started at another time (its pid was reused). Another host's process cannot be seen from here: False,
    and its lease decides."""
    process = owner.partition("/")[0]
    host, _, rest = process.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if start == "?":  # no /proc where it ran: only a missing pid proves it gone
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False
    return _started(int(pid)) != start
