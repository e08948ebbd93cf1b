"""Meshcat servers that listen on loopback unless asked otherwise (DESIGN.md: "Meshcat servers
listen on 127.0.0.1 unless the user asks for another interface").

Drake's `Meshcat()` binds every interface (`MeshcatParams.host` is "*" by default), so a live
viewer printed as a localhost URL was reachable from the whole network (issue 50). Every Meshcat
drakebots starts comes from here.
"""

from pydrake.geometry import Meshcat, MeshcatParams

LOOPBACK = "localhost"


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
