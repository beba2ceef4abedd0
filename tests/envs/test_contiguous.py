"""Images handed on by the environments are C-contiguous and keep their pixels."""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.envs.gym_frames import contiguous


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.transpose(1, 0, 2),  # column-major, as Crafter's render and pygame give
        lambda a: a[:, :, 0].T,  # grey, column-major
        lambda a: a[:, :, :3].transpose(1, 0, 2),  # RGB of an RGBA buffer: strided twice
        lambda a: a[::2, ::2],  # every other pixel
        lambda a: a.astype(np.float32).transpose(1, 0, 2),  # not bytes
        lambda a: a,  # already in C order
    ],
)
def test_contiguous_keeps_every_pixel(view) -> None:
    buf = np.random.default_rng(0).integers(0, 256, (37, 53, 4), dtype=np.uint8)
    img = view(buf)
    out = contiguous(img)
    assert out.flags.c_contiguous
    assert out.shape == img.shape and out.dtype == img.dtype
    assert np.array_equal(out, img)
    if img.flags.c_contiguous:
        assert out is img  # no copy
