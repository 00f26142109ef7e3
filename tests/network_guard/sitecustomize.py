"""Python runs this at start-up in a process a test starts with this folder on PYTHONPATH (tests/network_guard.py):
with GPU_ASSIST_TEST_NETWORK_LOG naming a file, every attempt to reach another machine, a connection to an address
that is not this machine's own or a look-up of a name other than localhost, is written there (one JSON object a
line) and refused before anything is sent; with GPU_ASSIST_TEST_DMI_DIR naming a folder, gpu_assist.cloud_host
reads the firmware's DMI strings from it, so a test says which cloud's instance the process runs on. The next
sitecustomize on the path runs after it, as it would have without this one (tests/moved_clock's under
`pytest --moved-clock`)."""

import os
import runpy
import sys

_LOG = os.environ.get("GPU_ASSIST_TEST_NETWORK_LOG")
_DMI_DIR = os.environ.get("GPU_ASSIST_TEST_DMI_DIR")

if _LOG:
    import errno
    import ipaddress
    import json
    import socket

    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def _literal(host):
        try:
            return ipaddress.ip_address(str(host).split("%")[0])
        except ValueError:
            return None

    def _own(host):
        address = _literal(host)
        return str(host).lower() == "localhost" if address is None else address.is_loopback

    def _record(kind, host, port):
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps({"kind": kind, "host": str(host), "port": port}) + "\n")

    def _outside(sock, address):
        """Whether a connection to `address` would leave the machine (a Unix socket never does)."""
        return sock.family in (socket.AF_INET, socket.AF_INET6) and not _own(address[0])

    def connect(self, address):
        if _outside(self, address):
            _record("connect", address[0], address[1])
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"refused by the test's network guard: {address[0]}")
        return _connect(self, address)

    def connect_ex(self, address):
        if _outside(self, address):
            _record("connect", address[0], address[1])
            return errno.ECONNREFUSED
        return _connect_ex(self, address)

    def getaddrinfo(host, port, *args, **kwargs):
        # an address written out needs no look-up; a name does, and asks a resolver on the network
        if host and _literal(host) is None and not _own(host):
            _record("resolve", host, port)
            raise socket.gaierror(socket.EAI_NONAME, f"refused by the test's network guard: {host}")
        return _getaddrinfo(host, port, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo

if _DMI_DIR:
    from pathlib import Path

    import gpu_assist.cloud_host

    gpu_assist.cloud_host.DMI_DIR = Path(_DMI_DIR)

_HERE = os.path.dirname(os.path.abspath(__file__))
_NEXT = next((os.path.join(entry, "sitecustomize.py") for entry in sys.path
              if entry and os.path.abspath(entry) != _HERE and os.path.isfile(os.path.join(entry, "sitecustomize.py"))),
             None)
if _NEXT:
    runpy.run_path(_NEXT)
