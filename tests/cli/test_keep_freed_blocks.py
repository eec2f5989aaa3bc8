"""``cl2gnn.cli.main.keep_freed_blocks``: after it, a 16 MiB block comes from the heap (and
stays there when freed) instead of its own mmap, which glibc unmaps on ``free``."""

import ctypes
import platform
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import ctypes, sys
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype = ctypes.c_void_p
    if sys.argv[1] == "keep":
        from cl2gnn.cli.main import keep_freed_blocks
        keep_freed_blocks()
    before = libc.mallinfo2().hblkhd  # bytes in blocks served by their own mmap
    block = libc.malloc(16 << 20)
    print(libc.mallinfo2().hblkhd - before)
    libc.free(ctypes.c_void_p(block))
    """
)


def mmapped_bytes(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="glibc's mallopt, read back by mallinfo2 (glibc 2.33 on)",
)
def test_keep_freed_blocks_serves_16_mib_from_the_heap():
    assert mmapped_bytes("default") >= 16 << 20  # glibc's default: its own mmap
    assert mmapped_bytes("keep") == 0
