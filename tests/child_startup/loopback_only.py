"""The tests reach nothing beyond this machine's loopback. `install()` runs in the test process (tests/conftest.py)
and, through sitecustomize.py beside this file on PYTHONPATH, at the start of every Python process the tests start.

A TCP connection or a UDP datagram to an address that is not loopback, and a name lookup that would ask DNS, raise
`LoopbackOnlyError` naming the host and port before anything leaves the machine. Loopback (127.0.0.0/8, ::1,
`localhost`) and Unix sockets pass; so do lookups that send no query: an address written as digits, `localhost`,
and this machine's own name (which libraries look up to list its addresses). Every refusal is also appended to the
file GPU_ASSIST_TEST_REFUSED_LOG names, so a test fails for it even where the code under test swallows the error,
or where the attempt was a server's in a process of its own (tests/conftest.py reads the file after each test).

Only what goes through Python's `socket` module is guarded: programs that are not Python (PostgreSQL, Chromium) and
C libraries that open sockets themselves are not; the tests point them at loopback."""

from __future__ import annotations

import os
import socket
import sys

REFUSED_LOG_ENV = "GPU_ASSIST_TEST_REFUSED_LOG"
# Set (to 1) where a test runs the product as if this machine had no network at all (tests/offline.py): a refusal
# is then the OSError an unreachable address or an unknown name gives, which the code under test must cope with.
UNREACHABLE_ENV = "GPU_ASSIST_TEST_UNREACHABLE"
ALLOWED = "127.0.0.0/8, ::1, localhost and Unix sockets"

_INTERNET = (socket.AF_INET, socket.AF_INET6)
_REAL = {name: getattr(socket.socket, name) for name in ("connect", "connect_ex", "sendto", "sendmsg")}
_REAL_LOOKUPS = {name: getattr(socket, name) for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex",
                                                          "gethostbyaddr", "getnameinfo")}


class LoopbackOnlyError(RuntimeError):
    """A test, or a process it started, tried to reach beyond loopback. Not an OSError on purpose: code that copes
    with an unreachable network (a retry, a fallback) must not turn this into a quiet pass."""


def install() -> None:
    """Guard this process's sockets and name lookups from now on (idempotent)."""
    for name, guard in _GUARDS.items():
        setattr(socket.socket, name, guard)
    for name, guard in _LOOKUP_GUARDS.items():
        setattr(socket, name, guard)


def installed() -> bool:
    """Whether every guard is still in place (a plugin or a test may have put a real function back)."""
    return (all(getattr(socket.socket, name) is guard for name, guard in _GUARDS.items())
            and all(getattr(socket, name) is guard for name, guard in _LOOKUP_GUARDS.items()))


def _ip(host: str):
    import ipaddress

    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 scope (`fe80::1%eth0`) is not part of it
    except ValueError:
        return None


def _text(host) -> str | None:
    if isinstance(host, (bytes, bytearray)):
        return bytes(host).decode("ascii", "replace")
    return host if isinstance(host, str) else None


def is_loopback(host) -> bool:
    """Whether `host` (an address or a name) is this machine's loopback without asking anyone."""
    name = _text(host)
    if name is None:
        return False
    if name.lower().rstrip(".") == "localhost":
        return True
    address = _ip(name)
    if address is None:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is IPv4's loopback reached over IPv6
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _asks_no_one(host) -> bool:
    """Whether looking `host` up sends no query: no host (a wildcard), digits, loopback, or this machine's name."""
    name = _text(host)
    if not name:
        return True
    return _ip(name) is not None or is_loopback(name) or name.lower().rstrip(".") == socket.gethostname().lower()


def _where(host, port) -> str:
    name = _text(host)
    name = repr(host) if name is None else name
    shown = f"[{name}]" if ":" in name else name
    return f"{shown}:{port}" if port is not None else shown


def refuse(what: str, *, lookup: bool = False) -> Exception:
    """Record the attempt (for tests/conftest.py) and build the error to raise: `LoopbackOnlyError`, or where
    UNREACHABLE_ENV is set, what an unreachable network raises (`socket.gaierror` for a lookup)."""
    path = os.environ.get(REFUSED_LOG_ENV)
    if path:
        line = f"{what}\t{os.getpid()}\t{' '.join(sys.argv)[:120]}\n".encode("utf-8", "replace")
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line)  # one write to an O_APPEND file: whole lines, whichever process writes
        finally:
            os.close(descriptor)
    if os.environ.get(UNREACHABLE_ENV):
        return socket.gaierror(socket.EAI_NONAME, f"{what}: no network here") if lookup else \
            ConnectionRefusedError(111, f"{what}: no network here")
    return LoopbackOnlyError(f"the tests reach only loopback ({ALLOWED}): {what} was refused before anything left "
                             "this machine")


def _check_destination(sock: socket.socket, address, verb: str) -> None:
    if sock.family not in _INTERNET:  # Unix sockets, netlink: nothing leaves the machine
        return
    host, port = (address[0], address[1]) if isinstance(address, tuple) and len(address) >= 2 else (address, None)
    if not is_loopback(host):
        sock.close()  # the caller's `except OSError` clean-up does not run for this error: close it here
        raise refuse(f"{verb} {_where(host, port)}")


def _connect(self, address):
    _check_destination(self, address, "connect to")
    return _REAL["connect"](self, address)


def _connect_ex(self, address):
    _check_destination(self, address, "connect to")
    return _REAL["connect_ex"](self, address)


def _sendto(self, data, *flags_and_address):
    if flags_and_address:  # sendto(data, address) or sendto(data, flags, address)
        _check_destination(self, flags_and_address[-1], "send to")
    return _REAL["sendto"](self, data, *flags_and_address)


def _sendmsg(self, buffers, *rest):
    if len(rest) >= 3:  # sendmsg(buffers, ancdata, flags, address)
        _check_destination(self, rest[2], "send to")
    return _REAL["sendmsg"](self, buffers, *rest)


def _getaddrinfo(host, port, *args, **kwargs):
    flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
    if not (_asks_no_one(host) or flags & socket.AI_NUMERICHOST):
        raise refuse(f"look up {_where(host, port)}", lookup=True)
    return _REAL_LOOKUPS["getaddrinfo"](host, port, *args, **kwargs)


def _gethostbyname(hostname):
    if not _asks_no_one(hostname):
        raise refuse(f"look up {_where(hostname, None)}", lookup=True)
    return _REAL_LOOKUPS["gethostbyname"](hostname)


def _gethostbyname_ex(hostname):
    if not _asks_no_one(hostname):
        raise refuse(f"look up {_where(hostname, None)}", lookup=True)
    return _REAL_LOOKUPS["gethostbyname_ex"](hostname)


def _gethostbyaddr(host):
    # a reverse lookup of any address but loopback's asks DNS; of this machine's own name, the hosts file
    name = _text(host) or ""
    if not (is_loopback(name) or name.lower().rstrip(".") == socket.gethostname().lower()):
        raise refuse(f"look up the name of {_where(host, None)}", lookup=True)
    return _REAL_LOOKUPS["gethostbyaddr"](host)


def _getnameinfo(sockaddr, flags):
    if not (flags & socket.NI_NUMERICHOST or (isinstance(sockaddr, tuple) and is_loopback(sockaddr[0]))):
        raise refuse(f"look up the name of {_where(sockaddr[0], sockaddr[1])}", lookup=True)
    return _REAL_LOOKUPS["getnameinfo"](sockaddr, flags)


_GUARDS = {"connect": _connect, "connect_ex": _connect_ex, "sendto": _sendto, "sendmsg": _sendmsg}
_LOOKUP_GUARDS = {"getaddrinfo": _getaddrinfo, "gethostbyname": _gethostbyname, "gethostbyname_ex": _gethostbyname_ex,
                  "gethostbyaddr": _gethostbyaddr, "getnameinfo": _getnameinfo}
