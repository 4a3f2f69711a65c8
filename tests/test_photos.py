"""Photos as photos: the time, camera, orientation and GPS position a camera wrote (real photos from
Pillow's tests, and copies tagged here for the odd cases), places named offline from GeoNames, and
what an ingest of a folder of them stores."""

from __future__ import annotations

import json
import logging
import re
import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from conftest import _fetched, run_cli
from memorize.places import places_in
from perception.errors import MediaError
from perception.sources.frames import read_image
from perception.sources.photos import oriented, photo_info


@pytest.fixture(scope="session")
def photos() -> Path:
    from bench.fixtures import pillow_photos

    return _fetched(pillow_photos, "Pillow's test photos")


def _tagged(
    src: Path, out: Path, gps=None, taken: str | None = None, offset: str | None = None
) -> Path:
    """A copy of ``src`` with the EXIF a camera would write: GPS ((lat ref, (d, m, s)), (lon ref, …)),
    DateTimeOriginal and OffsetTimeOriginal."""
    from PIL import Image

    with Image.open(src) as im:
        exif = im.getexif()
        if gps is not None:
            ifd = exif.get_ifd(0x8825)
            (ifd[1], ifd[2]), (ifd[3], ifd[4]) = gps
        sub = exif.get_ifd(0x8769)
        if taken:
            sub[36867] = taken
        if offset:
            sub[36881] = offset
        im.save(out, exif=exif, quality=95)
    return out


PARIS = (("N", (48.0, 51.0, 29.6)), ("E", (2.0, 17.0, 40.2)))  # the Eiffel Tower


def test_a_phone_photo_gives_its_time_with_offset_its_camera_and_where(photos):
    info = photo_info(photos / "ultrahdr.jpg")  # a Google Pixel 6's, in Zhejiang
    assert info.is_photo and info.camera == "Google Pixel 6" and info.time_origin == "exif"
    assert info.taken == datetime(2024, 5, 7, 9, 33, 4, tzinfo=timezone(timedelta(hours=8)))
    assert info.gps == pytest.approx((30.62765, 119.738767), abs=1e-5) and not info.warnings


def test_a_camera_without_an_offset_is_read_in_local_time_and_says_so(photos):
    info = photo_info(photos / "flower.jpg")
    assert (
        info.camera == "Canon PowerShot S40"
        and info.time_origin == "exif-local"
        and info.gps is None
    )
    assert (
        info.taken.replace(tzinfo=None) == datetime(2003, 12, 14, 12, 1, 44)
        and info.taken.tzinfo is not None
    )


def test_a_clock_never_set_and_a_broken_gps_tag_are_ignored_with_a_reason(photos):
    info = photo_info(photos / "exif_gps.jpg")  # 2099 and a latitude of 4294967295
    assert info.taken is None and info.time_origin == "" and info.gps is None and info.is_photo
    assert any("not a plausible time" in w for w in info.warnings)
    empty = photo_info(photos / "empty_gps_ifd.jpg")  # a phone that wrote an empty GPS block
    assert empty.gps is None and empty.orientation == 6 and empty.camera == "Xiaomi Redmi Note 9S"


@pytest.mark.parametrize(
    "gps, why",
    [
        ((("N", (0.0, 0.0, 0.0)), ("E", (0.0, 0.0, 0.0))), "0, 0"),
        ((("N", (95.0, 0.0, 0.0)), ("E", (2.0, 0.0, 0.0))), "out of range"),
    ],
)
def test_a_position_without_a_fix_or_out_of_range_is_dropped(photos, tmp_path, gps, why):
    info = photo_info(_tagged(photos / "flower.jpg", tmp_path / "x.jpg", gps))
    assert info.gps is None and any(why in w for w in info.warnings)


def test_south_and_west_are_negative(photos, tmp_path):
    rio = (("S", (22.0, 54.0, 0.0)), ("W", (43.0, 12.0, 0.0)))
    assert photo_info(_tagged(photos / "flower.jpg", tmp_path / "rio.jpg", rio)).gps == (
        -22.9,
        -43.2,
    )


def test_a_sideways_photo_is_read_upright(photos):
    from PIL import Image, ImageOps

    upright = read_image(photos / "hopper_orientation_6.jpg")
    with Image.open(photos / "hopper_orientation_6.jpg") as im:
        assert np.array_equal(upright, np.asarray(ImageOps.exif_transpose(im).convert("RGB")))
    stored = read_image(photos / "hopper.jpg")  # the same picture, stored upright
    assert upright.shape == stored.shape and np.abs(upright.astype(int) - stored).mean() < 8
    image = np.arange(6).reshape(2, 3)
    assert (
        oriented(image, 6).tolist() == np.rot90(image, -1).tolist() and oriented(image, 1) is image
    )


def test_heic_is_read_with_pillow_heif_and_named_without_it(photos, monkeypatch):
    pytest.importorskip("pillow_heif")  # in the test extra: this skips only outside it
    image = read_image(photos / "hopper.heif")
    assert image.ndim == 3 and image.shape[2] == 3 and image.std() > 20
    import perception.sources.frames as frames

    monkeypatch.setattr(frames, "heif_available", lambda: False)
    with pytest.raises(MediaError, match=r"pillow-heif.*mnemo\[heic\]"):
        read_image(photos / "hopper.heif")


def test_places_are_named_offline_as_a_person_would():
    from memorize.places import gazetteer, where

    g = gazetteer()
    assert (
        g.nearest(48.85822, 2.2945).city == "Paris"
    )  # not Neuilly-sur-Seine, whose centre is nearer
    assert (
        g.nearest(37.422, -122.0841).city == "Mountain View"
    )  # not the larger Sunnyvale, 7 km off
    assert g.nearest(0.0, -30.0) is None  # mid-Atlantic
    assert where(48.85822, 2.2945) == "in Paris, Île-de-France, France (48.85822° N, 2.29450° E)"
    assert where(30.62765, 119.738767).startswith("near Deqing, Zhejiang, China")
    assert where(0.0, -30.0) == "at 0.00000° N, 30.00000° W"


@pytest.mark.slow  # the perception models
def test_a_folder_of_photos_is_ingested_as_photos(photos, tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    folder = tmp_path / "holiday"
    folder.mkdir()
    _tagged(photos / "flower.jpg", folder / "DSC_0042.JPG", PARIS, "2023:05:08 14:30:00", "+02:00")
    for name in ("ultrahdr.jpg", "exif_gps.jpg", "hopper_orientation_6.jpg"):
        shutil.copy(photos / name, folder / name)
    store = tmp_path / "store"
    with caplog.at_level(logging.WARNING):
        code, out, err = run_cli(capsys, "ingest", str(folder), "--store", str(store))
    # the Pixel's pixels are cut short: what its EXIF says is kept, saying which file, and the rest stored
    assert code == 0 and "0 failed" in out and "3 new clip(s)" in out, out + err
    assert re.search(
        r"photo's pixels unreadable, its time and place kept: \S+ultrahdr\.jpg: not a readable image",
        err,
    ), err
    assert "exif_gps.jpg: EXIF time 2099:09:29 10:10:10 is not a plausible time" in caplog.text
    warned = [r.getMessage() for r in caplog.records if "carry no time" in r.getMessage()]
    assert len(warned) == 1 and "2 picture(s)" in warned[0]  # once for the folder, naming them

    from embeddings.base import build_text_embedder
    from graph.store import Store

    s = Store(store, build_text_embedder("hash"))
    memories = s.memories_where("true")
    paris = [m for m in memories if "in Paris, Île-de-France, France" in m.text]
    assert len(paris) == 1 and paris[0].text.startswith("A photo taken at 14:30:00 in Paris")
    assert "with a Canon PowerShot S40" in paris[0].text
    assert datetime.fromtimestamp(paris[0].start_ts, UTC) == datetime(
        2023, 5, 8, 12, 30, tzinfo=UTC
    )
    assert not [m for m in memories if m.kind == "resource"]  # no OCR on pictures without text
    pixel = [m for m in memories if m.provenance == (str(folder / "ultrahdr.jpg"),)]
    assert len(pixel) == 1 and pixel[0].text.startswith(
        "A photo taken at 09:33:04 near Deqing, Zhejiang, China ("
    )
    assert places_in(pixel[0].text) == ["Deqing, Zhejiang, China"] and pixel[0].text.endswith(
        "with a Google Pixel 6"
    )
    code, out, _ = run_cli(capsys, "ask", "Where was I on 8 May 2023?", "--store", str(store))
    assert code == 0 and "in Paris" in out and "DSC_0042" not in out
    code, out, _ = run_cli(capsys, "day", "2023-05-08", "--store", str(store), "--json")
    assert code == 0 and "places: Paris, Île-de-France, France (1 photo(s))" in out
    places = json.loads(out.strip().splitlines()[-1])["places"]
    assert [(p["name"], p["photos"], p["stayed_s"]) for p in places] == [
        ("Paris, Île-de-France, France", 1, 0.0)
    ]
    assert places[0]["clip_id"] == paris[0].clip_id
