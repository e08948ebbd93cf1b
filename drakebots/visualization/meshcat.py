"""Meshcat servers that listen on loopback unless asked otherwise (DESIGN.md: "Meshcat servers
listen on 127.0.0.1 unless the user asks for another interface").

Drake's `Meshcat()` binds every interface (`MeshcatParams.host` is "*" by default), so a live
viewer printed as a localhost URL was reachable from the whole network (issue 50). Every Meshcat
drakebots starts comes from here.
"""

import ipaddress
import socket

from pydrake.geometry import Meshcat, MeshcatParams

LOOPBACK = "localhost"
# The one spelling of "every interface" a user may ask for (documented in `drakebots view
# --help`): any other host that means every interface ("", "*", "::", "0", "0.0.0.0.", "::0")
# is refused, so that no typo or empty variable opens the viewer to the network (issue 68).
WILDCARD = "0.0.0.0"
# Hosts that mean "every interface" as Drake and the socket library read them.
WILDCARD_HOSTS = ("*", "0.0.0.0", "::", "")
# The lowest port drakebots listens on: the ones below are privileged (root's services).
FIRST_UNPRIVILEGED_PORT = 1024


def CheckPort(port: int) -> int:
    """`port` as an int, or ValueError when it is outside 1024-65535 (below 1024 are privileged
    ports, above 65535 are not ports)."""
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise ValueError(f"{port!r} is not a port number") from None
    if not FIRST_UNPRIVILEGED_PORT <= port <= 65535:
        raise ValueError(
            f"{port} is outside {FIRST_UNPRIVILEGED_PORT}-65535 (ports below "
            f"{FIRST_UNPRIVILEGED_PORT} are privileged)"
        )
    return port


def LocalMeshcat(host: str = LOOPBACK, port: int | None = None) -> Meshcat:
    """A Meshcat server bound to `host` (default: loopback only, 127.0.0.1) on `port` (None:
    the first free one from 7000); its `web_url()` is the address that works. ValueError for a
    host CheckHost refuses or a port CheckPort refuses."""
    CheckHost(host)
    params = MeshcatParams()
    params.host = host
    if port is not None:
        params.port = CheckPort(port)
    return Meshcat(params)


def CheckHost(host: str) -> None:
    """ValueError unless `host` is the documented wildcard "0.0.0.0" or an address or name this
    machine resolves to specific addresses: the empty string, "*", "::" and every other spelling
    of "every interface" are refused (said before a server is started)."""
    if host == WILDCARD:
        return
    if not isinstance(host, str) or not host.strip():
        raise ValueError(
            f"{host!r} is empty: give an address (default 127.0.0.1), or {WILDCARD} to listen "
            "on every interface"
        )
    if host.strip() != host:
        raise ValueError(f"{host!r} has spaces around it; give the address alone")
    if host == "*":
        raise ValueError(
            f"{host!r} is not an address; to listen on every interface give {WILDCARD} exactly"
        )
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as e:
        raise ValueError(f"{host!r} is not an address or a known host name ({e})") from None
    for info in infos:
        address = info[4][0].split("%", 1)[0]
        try:
            unspecified = ipaddress.ip_address(address).is_unspecified
        except ValueError:
            continue
        if unspecified:
            raise ValueError(
                f"{host!r} means every interface; to listen on every interface give "
                f"{WILDCARD} exactly"
            )


def WebUrl(meshcat: Meshcat, host: str) -> str:
    """The URL a browser opens for `meshcat` bound to `host`: Drake's web_url() prints a wildcard
    bind as 0.0.0.0 and an IPv6 address without brackets, neither of which a browser opens; a
    wildcard is reached at this machine's name (from another machine too)."""
    if host in WILDCARD_HOSTS:
        return f"http://{socket.gethostname()}:{meshcat.port()}"
    if ":" in host:
        return f"http://[{host}]:{meshcat.port()}"
    return meshcat.web_url()
