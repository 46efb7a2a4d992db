"""A device memory pool whose pages can be unmapped: CUDA virtual memory management.

The pool is one physical allocation (`cuMemCreate`) mapped at a reserved address
(`cuMemAddressReserve`, `cuMemMap`), as sleep-mode allocators do, so that
`unmap()` can hand the pages back to the driver (`cuMemUnmap`, `cuMemRelease`)
while the address range stays reserved. `pool` is a CUDA tensor over the range.
"""

import ctypes

import torch

_PINNED, _ON_DEVICE, _READ_WRITE = 1, 1, 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _AllocProp(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


def _check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed: CUresult {result}")


class _DeviceRange:
    """The range described as device memory (`__cuda_array_interface__`)."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {
            "shape": (n,),
            "typestr": "<f4",
            "data": (ptr, False),
            "version": 2,
        }


class PoolAllocator:
    def __init__(self, nbytes=1 << 26):
        torch.cuda.init()
        self._cuda = ctypes.CDLL("libcuda.so.1")
        device = torch.cuda.current_device()
        prop = _AllocProp(type=_PINNED, location=_Location(_ON_DEVICE, device))
        granularity = ctypes.c_size_t()
        _check(
            self._cuda.cuMemGetAllocationGranularity(
                ctypes.byref(granularity), ctypes.byref(prop), 0
            ),
            "cuMemGetAllocationGranularity",
        )
        self.size = -(-nbytes // granularity.value) * granularity.value
        self.handle = ctypes.c_ulonglong()
        _check(
            self._cuda.cuMemCreate(
                ctypes.byref(self.handle),
                ctypes.c_size_t(self.size),
                ctypes.byref(prop),
                ctypes.c_ulonglong(0),
            ),
            "cuMemCreate",
        )
        self.ptr = ctypes.c_ulonglong()
        _check(
            self._cuda.cuMemAddressReserve(
                ctypes.byref(self.ptr),
                ctypes.c_size_t(self.size),
                ctypes.c_size_t(0),
                ctypes.c_ulonglong(0),
                ctypes.c_ulonglong(0),
            ),
            "cuMemAddressReserve",
        )
        _check(
            self._cuda.cuMemMap(
                self.ptr,
                ctypes.c_size_t(self.size),
                ctypes.c_size_t(0),
                self.handle,
                ctypes.c_ulonglong(0),
            ),
            "cuMemMap",
        )
        access = _AccessDesc(location=_Location(_ON_DEVICE, device), flags=_READ_WRITE)
        _check(
            self._cuda.cuMemSetAccess(
                self.ptr, ctypes.c_size_t(self.size), ctypes.byref(access), ctypes.c_size_t(1)
            ),
            "cuMemSetAccess",
        )
        self.pool = torch.as_tensor(_DeviceRange(self.ptr.value, self.size // 4), device="cuda")
        self.mapped = True

    def unmap(self):
        """Release the pool's physical pages back to the driver."""
        _check(self._cuda.cuMemUnmap(self.ptr, ctypes.c_size_t(self.size)), "cuMemUnmap")
        _check(self._cuda.cuMemRelease(self.handle), "cuMemRelease")
        self.mapped = False
