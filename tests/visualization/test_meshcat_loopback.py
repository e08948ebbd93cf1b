"""Meshcat servers listen on loopback only unless asked (issue 50): the socket's bound address,
read from the kernel's table of listening sockets (ss), not from the URL Drake prints."""

import os
import shutil
import subprocess

import pytest

from drakebots.visualization.meshcat import LocalMeshcat


def _ListeningAddresses(port: int) -> list[str]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    mine = f"pid={os.getpid()},"
    return [
        line.split()[3].rsplit(":", 1)[0]
        for line in out.splitlines()
        if line.split()[3].endswith(f":{port}") and mine in line
    ]


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss")
def test_a_meshcat_listens_on_loopback_only():
    meshcat = LocalMeshcat()
    addresses = _ListeningAddresses(meshcat.port())
    assert addresses and all(a in ("127.0.0.1", "[::1]") for a in addresses), addresses
    assert meshcat.web_url().startswith("http://localhost:")


def test_a_port_outside_the_range_is_refused():
    with pytest.raises(ValueError, match="65535"):
        LocalMeshcat(port=70000)


def test_the_url_printed_for_a_host_is_one_a_browser_opens():
    """A wildcard bind is reached at this machine's name (Drake prints 0.0.0.0); an IPv6
    address goes in brackets; a named host keeps Drake's URL."""
    import socket

    from drakebots.visualization.meshcat import CheckHost, WebUrl

    class Fake:
        def port(self):
            return 7123

        def web_url(self):
            return "http://127.0.0.1:7123"

    for wildcard in ("0.0.0.0", "*", "::"):
        assert WebUrl(Fake(), wildcard) == f"http://{socket.gethostname()}:7123"
    assert WebUrl(Fake(), "::1") == "http://[::1]:7123"
    assert WebUrl(Fake(), "127.0.0.1") == "http://127.0.0.1:7123"
    CheckHost("127.0.0.1")
    with pytest.raises(ValueError, match="no-such-host.invalid"):
        CheckHost("no-such-host.invalid")
