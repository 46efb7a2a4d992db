"""Device-addressable views of pinned host memory."""

import torch


class _HostArray:
    """A pinned tensor's memory described as device memory (`__cuda_array_interface__`).

    With unified addressing, memory from cudaHostAlloc (PyTorch's pinned allocator)
    is mapped into the device's address space at the same pointer, so a CUDA tensor
    over that pointer reads host memory in place, whenever a kernel gets to it.
    """

    TYPESTR = {torch.int64: "<i8", torch.int32: "<i4"}

    def __init__(self, t):
        self.owner = t  # keeps the pinned memory alive as long as the view
        self.__cuda_array_interface__ = {
            "shape": tuple(t.shape),
            "typestr": self.TYPESTR[t.dtype],
            "data": (t.data_ptr(), False),
            "version": 2,
        }


def device_view_of(t):
    """Return a UVA view of the pinned CPU tensor `t`: kernels read it in place."""
    return torch.as_tensor(_HostArray(t), device="cuda")
