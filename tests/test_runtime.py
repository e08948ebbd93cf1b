"""drakebots.runtime: the process settings the skinned robots' frames are measured faster with."""

import os
import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from drakebots import runtime

_PROBE = """
import os, numpy as np
from drakebots import runtime
kept = runtime.KeepFreedMemory()
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
before = rss()
a = np.ones(8 * 1024 * 1024)  # 64 MB, above glibc's largest mmap threshold (32 MB)
del a
print(kept, (rss() - before) / 2**20)
"""


def _FreedMegabytesStillResident(keep: bool):
    env = dict(os.environ, DRAKEBOTS_KEEP_FREED_MEMORY="1" if keep else "0")
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "True", float(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_large_arrays_stay_in_the_process_once_freed_memory_is_kept():
    # Fresh processes: the setting is process-wide and this one may have it already.
    kept, resident = _FreedMegabytesStillResident(True)
    assert kept
    assert resident > 60.0  # the 64 MB block stays for the next frame's arrays
    kept, resident = _FreedMegabytesStillResident(False)
    assert not kept
    assert resident < 4.0  # glibc's default: unmapped on free
    assert runtime.KeepFreedMemory() == runtime.KeepFreedMemory()  # idempotent


def test_single_threaded_blas_holds_every_blas_to_one_thread_and_restores():
    before = {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert before, "numpy without a BLAS library"
    with runtime.SingleThreadedBlas():
        inside = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        assert all(n == 1 for n in inside)
        x = np.random.default_rng(0).standard_normal((64, 64))
        np.testing.assert_allclose((x @ x.T), (x @ x.T).T)
    after = {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    for path, n in before.items():
        assert after[path] == n


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_library_call_leaves_the_allocator_alone_and_the_command_opts_in():
    """Building a FemModel (as any skin, bend or design does) does not set glibc's mallopt for
    the process (issue 46); the `drakebots` command opts in at start-up."""
    probe = """
from drakebots import runtime
from drakebots.fem.materials import Material
from drakebots.fem.mesh import TetMesh
from drakebots.fem.model import FemModel
import numpy as np
mesh = TetMesh(np.array([[0., 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]), np.array([[0, 1, 2, 3]]))
FemModel(mesh, Material(youngs_modulus=1e6, poissons_ratio=0.3))
print(runtime._state["memory"])
from drakebots.cli import main
main(["info"])
print(runtime._state["memory"])
"""
    env = dict(os.environ, DRAKEBOTS_KEEP_FREED_MEMORY="1")
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "None" and out[-1] == "True"
