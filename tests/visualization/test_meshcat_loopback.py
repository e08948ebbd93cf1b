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
