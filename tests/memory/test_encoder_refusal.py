"""The manifest's encoder: the weights it was built with, and a refusal that says what to set.

Also the compatibility of identities: a memory recorded under the identity earlier
versions gave a weights file (a hash of its bytes) opens with the encoder that now
names the same weights otherwise (a hash of its image tower's tensors).
"""

from __future__ import annotations

import numpy as np
import pytest

from kgagent.config import Config
from kgagent.errors import EncoderMismatchError
from kgagent.memory import EncoderSpec, Memory
from kgagent.memory.files import read_manifest, write_manifest

TH = (0.95, 0.88)
CLIP = EncoderSpec("clip:ViT-B-32:visual-sha256-0123456789ab", 8, TH, weights="/w/clip.pt")
PIXEL = EncoderSpec("pixel:v1", 928, (0.985, 0.70))


def _made_with(tmp_path, spec: EncoderSpec):
    path = tmp_path / "m"
    with Memory.open(path, Config(), encoder=spec):
        pass
    return path


def _refusal(path, spec: EncoderSpec) -> str:
    with pytest.raises(EncoderMismatchError) as info:
        Memory.open(path, Config(), encoder=spec)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_the_manifest_records_the_weights_and_the_refusal_names_them(tmp_path) -> None:
    path = _made_with(tmp_path, CLIP)
    assert read_manifest(path)["encoder"]["weights"] == "/w/clip.pt"
    msg = _refusal(path, PIXEL)  # clip_weights forgotten: the pixel encoder's features
    assert (
        "built with encoder clip:ViT-B-32:visual-sha256-0123456789ab (8-d) from /w/clip.pt" in msg
    )
    assert "features from pixel:v1 (928-d) cannot join it" in msg
    assert "set perception.encoder=clip and perception.clip_weights=/w/clip.pt" in msg
    other = EncoderSpec("clip:ViT-B-32:visual-sha256-ffffffffffff", 8, TH, weights="/w/new.pt")
    assert "set perception.clip_weights=/w/clip.pt, or start a new memory" in _refusal(path, other)
    changed = EncoderSpec("clip:ViT-B-32:visual-sha256-ffffffffffff", 8, TH, weights="/w/clip.pt")
    assert "/w/clip.pt has changed since" in _refusal(path, changed)


def test_an_older_manifest_without_weights_says_to_set_the_file_it_was_built_with(
    tmp_path,
) -> None:
    old = EncoderSpec("clip:ViT-B-32:sha256-342c556da5a4", 8, TH)
    path = _made_with(tmp_path, old)
    assert "weights" not in read_manifest(path)["encoder"]
    msg = _refusal(path, EncoderSpec("clip:ViT-B-32:visual-sha256-c13dab08bc10", 8, TH))
    assert "(8-d); features from" in msg  # no "from <file>": none recorded
    assert "set perception.clip_weights to the file it was built with" in msg
    tag = _made_with(tmp_path / "t", EncoderSpec("clip:ViT-L-14:openai", 8, TH, weights="openai"))
    msg = _refusal(tag, PIXEL)
    assert "clip:ViT-L-14:openai (8-d); features" in msg  # the tag is named once
    assert "perception.clip_model=ViT-L-14 and perception.clip_weights=openai" in msg
    pixel = _made_with(tmp_path / "p", PIXEL)
    assert "set perception.encoder=pixel" in _refusal(pixel, CLIP)


def test_a_manifest_whose_encoder_width_was_changed_is_named_not_the_settings(tmp_path) -> None:
    """The settings are right (the same encoder): the manifest is what is wrong."""
    path = _made_with(tmp_path, PIXEL)
    manifest = read_manifest(path)
    manifest["encoder"]["dim"] = 5
    write_manifest(path, manifest)
    msg = _refusal(path, PIXEL)
    assert "manifest.json records 5-d for pixel:v1, which gives 928-d" in msg
    assert "restore it from backups/ or an export" in msg and "set perception" not in msg


def test_a_memory_of_the_old_file_hash_opens_with_the_same_weights(tmp_path) -> None:
    old = EncoderSpec("clip:ViT-B-32:sha256-342c556da5a4", 8, TH)
    path = _made_with(tmp_path, old)
    with Memory.open(path, Config(), encoder=old) as m:
        m.merge_or_create_state(np.eye(8)[0])
    manifest = read_manifest(path)
    same = EncoderSpec(
        "clip:ViT-B-32:visual-sha256-0123456789ab",
        8,
        TH,
        weights="/w/clip.pt",
        aliases=("clip:ViT-B-32:sha256-342c556da5a4",),
    )
    with Memory.open(path, Config(), encoder=same) as m:
        assert m.merge_or_create_state(np.eye(8)[0]).created is False  # the same state
    # The recorded identity stays the old one, so an older kgagent still opens it.
    assert read_manifest(path)["encoder"] == manifest["encoder"]
    write_manifest(path, manifest)
    other_file = EncoderSpec(
        "clip:ViT-B-32:visual-sha256-0123456789ab", 8, TH, aliases=("clip:ViT-B-32:sha256-0",)
    )
    _refusal(path, other_file)


def test_another_version_of_the_pixel_encoder_is_not_told_to_set_pixel(tmp_path) -> None:
    """A memory of pixel:v0 offered pixel:v1 was told "set perception.encoder=pixel", which
    is set: no setting gives another version of the encoder."""
    old = _made_with(tmp_path, EncoderSpec("pixel:v0", 928, (0.985, 0.70)))
    msg = _refusal(old, PIXEL)
    assert "set perception.encoder=pixel" not in msg
    assert "pixel:v1 is another version of the pixel encoder than pixel:v0" in msg
    assert "use the kgagent it was built with" in msg
