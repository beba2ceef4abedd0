"""The one-line explanations of weight files that do not load (kgagent/perception/weights.py)."""

from __future__ import annotations

import pytest

from kgagent.perception.weights import guess_sam_model, mismatch, one_line, unreadable


def test_one_line_flattens_and_cuts_at_a_word():
    text = "Error(s) in loading state_dict for CLIP:\n\tsize mismatch for visual.conv1.weight"
    assert one_line(text) == " ".join(text.split())
    assert one_line("a long sentence that goes on", 14) == "a long…"


def test_mismatch_counts_and_shows_a_first_example():
    expected = {"a": (2, 3), "b": (4,), "c": (1,)}
    assert mismatch(expected, dict(expected), "M") is None
    found = {"a": (2, 5), "b": (4,), "x": (1,), "y": (1,)}
    assert mismatch(expected, found, "M") == (
        "size mismatch: 1 tensor differs in shape, e.g. a [2,5] in the file vs [2,3] for M; "
        "missing 1 key, e.g. c; unexpected 2, e.g. x"
    )


def test_unreadable_keeps_the_point_of_torchs_paragraph():
    e = RuntimeError(
        "PytorchStreamReader failed reading zip archive: failed finding central directory. "
        "This is an internal miniz error. If you are seeing this error, there is a high "
        "likelihood that your checkpoint file is corrupted."
    )
    assert unreadable(e) == (
        "truncated or not a checkpoint (PytorchStreamReader failed reading zip archive: "
        "failed finding central directory)"
    )


@pytest.mark.parametrize("name", ["vit_b", "vit_l", "vit_h"])
def test_which_sam_a_checkpoint_is_for(name):
    torch = pytest.importorskip("torch")
    from segment_anything import sam_model_registry

    from kgagent.perception.weights import shapes

    with torch.device("meta"):  # shapes only, no memory
        state = sam_model_registry[name](checkpoint=None).state_dict()
    assert guess_sam_model(shapes(state)) == name
    assert guess_sam_model({"something.else": (3,)}) is None
