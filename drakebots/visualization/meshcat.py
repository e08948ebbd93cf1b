"""Meshcat servers that listen on loopback unless asked otherwise (DESIGN.md: "Meshcat servers
listen on 127.0.0.1 unless the user asks for another interface").

Drake's `Meshcat()` binds every interface (`MeshcatParams.host` is "*" by default), so a live
viewer printed as a localhost URL was reachable from the whole network (issue 50). Every Meshcat
drakebots starts comes from here.
"""

import socket

from pydrake.geometry import Meshcat, MeshcatParams

LOOPBACK = "localhost"
# Hosts that mean "every interface" (Drake's "*" and the IPv4/IPv6 wildcards).
WILDCARD_HOSTS = ("*", "0.0.0.0", "::", "")


def LocalMeshcat(host: str = LOOPBACK, port: int | None = None) -> Meshcat:
    """A Meshcat server bound to `host` (default: loopback only, 127.0.0.1) on `port` (None:
    the first free one from 7000); its `web_url()` is the address that works."""
    params = MeshcatParams()
    params.host = host
    if port is not None:
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"port {port}: outside 1-65535")
        params.port = int(port)
    return Meshcat(params)


def CheckHost(host: str) -> None:
    """ValueError when `host` is neither a wildcard nor an address or name this machine resolves
    (said before a server is started)."""
    if host in WILDCARD_HOSTS:
        return
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as e:
        raise ValueError(f"{host!r} is not an address or a known host name ({e})") from None


def WebUrl(meshcat: Meshcat, host: str) -> str:
    """The URL a browser opens for `meshcat` bound to `host`: Drake's web_url() prints a wildcard
    bind as 0.0.0.0 and an IPv6 address without brackets, neither of which a browser opens; a
    wildcard is reached at this machine's name (from another machine too)."""
    if host in WILDCARD_HOSTS:
        return f"http://{socket.gethostname()}:{meshcat.port()}"
    if ":" in host:
        return f"http://[{host}]:{meshcat.port()}"
    return meshcat.web_url()
