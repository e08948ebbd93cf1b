"""drakebots.runtime: the process settings the skinned robots' frames are measured faster with."""

import os
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from drakebots import runtime


def _HeapRange():
    """(start, end) of the process's brk heap from /proc/self/maps."""
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith("[heap]"):
                lo, hi = line.split()[0].split("-")
                return int(lo, 16), int(hi, 16)
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.skipif(
    os.environ.get("DRAKEBOTS_KEEP_FREED_MEMORY") == "0", reason="opted out in the environment"
)
def test_large_arrays_come_from_the_heap_once_freed_memory_is_kept():
    assert runtime.KeepFreedMemory()
    assert runtime.KeepFreedMemory()  # idempotent
    # 64 MB is above glibc's largest mmap threshold (32 MB): without the setting it would be a
    # fresh anonymous mapping outside the [heap] region.
    a = np.ones(8 * 1024 * 1024)
    heap = _HeapRange()
    assert heap is not None
    address = a.__array_interface__["data"][0]
    assert heap[0] <= address < heap[1]
    # Freed and allocated again: the heap does not shrink back (no fresh page faults).
    del a
    size = heap[1] - heap[0]
    b = np.ones(8 * 1024 * 1024)
    assert _HeapRange()[1] - _HeapRange()[0] >= size
    del b


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
