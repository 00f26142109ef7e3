"""The tests reach nothing beyond loopback (tests/child_startup/loopback_only.py): in the test process and in every
Python process it starts, a connection to a real address or a DNS lookup is refused before anything leaves the
machine, naming the address, and fails the test even where the code under test swallows the error. Loopback and
Unix sockets work. The only addresses tried here are TEST-NET-1 (192.0.2.0/24) and the reserved `.invalid` names,
and the guard stops each before a packet or a query is sent."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import urllib.request

import pytest

from child_startup import loopback_only
from support import REPO

UNROUTABLE = ("192.0.2.1", 80)  # TEST-NET-1: documentation only, never routed


@pytest.fixture
def real_connects(monkeypatch):
    """Every address this process's sockets really connected to, from here on (the guard's own call to the OS)."""
    reached = []

    def connect(sock, address):
        reached.append(address)
        return real(sock, address)

    real = loopback_only._REAL["connect"]
    monkeypatch.setitem(loopback_only._REAL, "connect", connect)
    return reached


@pytest.fixture
def echo_server():
    """A TCP listener on 127.0.0.1 that answers each connection with what it read, upper-cased."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(conn.recv(64).upper())

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def test_a_connection_to_a_real_address_is_refused_naming_it_before_it_is_made(refused_connections, real_connects):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"connect to 192\.0\.2\.1:80 was refused"):
        sock.connect(UNROUTABLE)
    assert sock.fileno() == -1  # closed by the guard: no descriptor left behind
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"connect to 192\.0\.2\.1:80"):
        socket.create_connection(UNROUTABLE, timeout=5)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other, \
            pytest.raises(loopback_only.LoopbackOnlyError, match=r"connect to 192\.0\.2\.1:80"):
        other.connect_ex(UNROUTABLE)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, \
            pytest.raises(loopback_only.LoopbackOnlyError, match=r"send to 192\.0\.2\.1:53"):
        udp.sendto(b"query", ("192.0.2.1", 53))
    assert real_connects == []  # the operating system was never asked
    assert [what for what, _ in refused_connections()] == ["connect to 192.0.2.1:80"] * 3 + ["send to 192.0.2.1:53"]


def test_a_name_is_not_looked_up_and_an_http_client_is_refused_naming_host_and_port(refused_connections,
                                                                                    real_connects):
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"look up gpu-assist\.invalid:443 was refused"):
        socket.getaddrinfo("gpu-assist.invalid", 443)
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"look up gpu-assist\.invalid"):
        socket.gethostbyname("gpu-assist.invalid")
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"look up the name of 192\.0\.2\.1"):
        socket.gethostbyaddr("192.0.2.1")
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"look up gpu-assist\.invalid:8443"):
        urllib.request.urlopen("https://gpu-assist.invalid:8443/prices", timeout=5)
    with pytest.raises(loopback_only.LoopbackOnlyError, match=r"connect to 192\.0\.2\.1:8080"):
        urllib.request.urlopen("http://192.0.2.1:8080/", timeout=5)
    assert real_connects == []
    assert len(refused_connections()) == 5
    # what sends no query still answers: digits, loopback's name, this machine's own name
    assert socket.getaddrinfo("192.0.2.1", 80)[0][4][:2] == UNROUTABLE
    assert "127.0.0.1" in {info[4][0] for info in socket.getaddrinfo("localhost", 80)}
    assert socket.gethostbyaddr("127.0.0.1")


def test_a_swallowed_refusal_still_counts(refused_connections):
    try:  # as a client with a fallback would
        socket.create_connection(UNROUTABLE, timeout=5)
    except Exception:
        pass
    assert [what for what, pid in refused_connections() if pid == os.getpid()] == ["connect to 192.0.2.1:80"]


def test_loopback_and_unix_sockets_work(echo_server, real_connects, tmp_path):
    for host in ("127.0.0.1", "localhost"):
        with socket.create_connection((host, echo_server), timeout=10) as conn:
            conn.sendall(b"ping")
            assert conn.recv(64) == b"PING"
    assert ("127.0.0.1", echo_server) in real_connects
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen()
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(path)
            accepted, _ = listener.accept()
            accepted.close()
    assert path in real_connects


def test_ipv6_loopback_works_and_other_ipv6_is_refused(refused_connections):
    try:
        listener = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with listener, socket.create_connection(("::1", listener.getsockname()[1]), timeout=10):
        pass
    with socket.socket(socket.AF_INET6) as sock, \
            pytest.raises(loopback_only.LoopbackOnlyError, match=r"connect to \[2001:db8::1\]:443"):
        sock.connect(("2001:db8::1", 443))
    assert [what for what, _ in refused_connections()] == ["connect to [2001:db8::1]:443"]


_CHILD = """\
import socket, sys
try:
    socket.create_connection(("192.0.2.1", 80), timeout=5)
except Exception as error:
    print(type(error).__name__, error)
try:
    socket.getaddrinfo("gpu-assist.invalid", 443)
except Exception as error:
    print(type(error).__name__, error)
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as conn:
    conn.sendall(b"child")
    print("loopback answered", conn.recv(64).decode())
"""


@pytest.mark.slow  # a subprocess
def test_a_python_process_the_tests_start_is_kept_to_loopback_too(refused_connections, echo_server):
    done = subprocess.run([sys.executable, "-c", _CHILD, str(echo_server)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("LoopbackOnlyError") and "connect to 192.0.2.1:80 was refused" in lines[0]
    assert lines[1].startswith("LoopbackOnlyError") and "look up gpu-assist.invalid:443 was refused" in lines[1]
    assert lines[2] == "loopback answered CHILD"
    refused = refused_connections()
    assert [what for what, _ in refused] == ["connect to 192.0.2.1:80", "look up gpu-assist.invalid:443"]
    assert {pid for _, pid in refused} != {os.getpid()}  # the child's own, logged for this test to fail on


@pytest.mark.slow  # a pytest run of its own
def test_a_test_that_swallows_a_refusal_fails_naming_the_address(tmp_path):
    (tmp_path / "test_reaching_out.py").write_text(
        "import socket\n\n\ndef test_falls_back_quietly():\n    try:\n"
        "        socket.create_connection(('192.0.2.1', 80), timeout=5)\n    except Exception:\n        pass\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["PYTHONPATH"], str(REPO / "tests")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "-p", "conftest", "test_reaching_out.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 failed" in done.stdout
    assert "tried to reach beyond loopback" in done.stdout and "connect to 192.0.2.1:80" in done.stdout
