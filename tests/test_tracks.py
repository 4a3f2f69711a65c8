"""GPS tracks: real GPX recordings (gpxpy's test tracks: walks around Lake Cerknica in Slovenia and
from Korita to Zbevnica in Croatia) cut into stays and moves, named offline, ingested, asked about,
digested and forgotten; and the odd files a person's exports hold (no times, a clock never set, a
planned route, a gap, a DTD, cut short)."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC
from pathlib import Path

import pytest

from conftest import _fetched, files_holding, run_cli
from control.answer import same_place, when_at_a_place
from perception.errors import MediaError
from perception.sources.tracks import (
    STAY_MIN_S,
    STAY_RADIUS_M,
    Fix,
    Track,
    distance_m,
    read_gpx,
    segments,
)


@pytest.fixture(scope="session")
def tracks() -> Path:
    from bench.fixtures import gpx_tracks

    return _fetched(gpx_tracks, "gpxpy's test tracks")


def test_a_real_walk_is_cut_into_stays_and_moves(tracks):
    track = read_gpx(tracks / "korita-zbevnica.gpx")
    # 871 points, of which 358 carry no time: a point without a time says nothing about when
    assert len(track.fixes) == 513 and track.dropped == {"no time": 358}
    assert all(a.ts < b.ts for a, b in zip(track.fixes, track.fixes[1:]))
    segs = segments(track)
    assert [s.kind for s in segs] == ["stay", "move"] * 3
    for s in segs:
        assert s.start_ts < s.end_ts
    for a, b in zip(
        segs, segs[1:]
    ):  # in time order, a move starting where the stay before it ended
        assert a.end_ts <= b.start_ts
    for s in (s for s in segs if s.kind == "stay"):
        assert s.end_ts - s.start_ts >= STAY_MIN_S
        inside = [f for f in track.fixes if s.start_ts <= f.ts <= s.end_ts]
        assert len(inside) == s.fixes and all(
            distance_m(inside[0], f) <= STAY_RADIUS_M for f in inside
        )
    assert round(sum(s.km for s in segs if s.kind == "move"), 1) == 5.9


def test_a_gap_ends_a_move_and_a_night_at_home_stays_one_stay():
    def fix(minute, lat, lon):
        return Fix(1_600_000_000 + minute * 60.0, lat, lon)

    walk = [fix(m, 46.0 + m * 0.001, 14.0) for m in range(10)]  # about 110 m a minute
    later = [
        fix(60 + m, 46.1 + m * 0.001, 14.0) for m in range(10)
    ]  # 50 minutes without a fix, far away
    moves = segments(Track("t.gpx", tuple(walk + later), {}))
    assert [(s.kind, s.fixes) for s in moves] == [("move", 10), ("move", 10)]  # the gap is no move

    home = [
        fix(0, 46.0, 14.0),
        fix(1, 46.0001, 14.0),
        fix(9 * 60, 46.0002, 14.0),
    ]  # phone off overnight
    assert [(s.kind, s.fixes) for s in segments(Track("t.gpx", tuple(home), {}))] == [("stay", 3)]
    away = [
        fix(0, 46.0, 14.0),
        fix(1, 46.0001, 14.0),
        fix(13 * 60, 46.0002, 14.0),
    ]  # longer than a night
    assert [
        s.kind for s in segments(Track("t.gpx", tuple(away), {}))
    ] == []  # nothing known in between


@pytest.mark.parametrize(
    "name, says",
    [
        ("Mojstrovka.gpx", "184 point(s): time not plausible"),  # times in 1901
        ("route.gpx", "a planned route or waypoints only"),
        # 291 of its 296 points lost their times; the 5 left span 55 s within 100 m
        ("cerknicko-without-times.gpx", "its 5 fix(es) never left 100 m of where they began"),
    ],
)
def test_a_track_that_says_nothing_of_where_anyone_was_is_refused_by_name(tracks, name, says):
    from perception.sources.tracks import plan_track_clips

    with pytest.raises(MediaError) as e:
        plan_track_clips(tracks / name)
    assert name in str(e.value) and says in str(e.value)


def test_hostile_or_broken_gpx_is_refused_with_what_to_do(tracks, tmp_path):
    real = (tracks / "cerknicko-jezero.gpx").read_bytes()
    cases = {
        "bomb.gpx": (
            b'<?xml version="1.0"?><!DOCTYPE gpx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            + real[real.find(b"<gpx") :]
        ),
        "cut.gpx": real[: len(real) // 2],
        "notgpx.gpx": b"<?xml version='1.0'?><kml><Placemark/></kml>",
        "empty.gpx": b"",
    }
    said = {
        "bomb.gpx": "declares a DTD",
        "cut.gpx": "not well-formed",
        "notgpx.gpx": "its root is <kml>",
        "empty.gpx": "not well-formed",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(MediaError) as e:
            read_gpx(tmp_path / name)
        assert name in str(e.value) and said[name] in str(e.value), str(e.value)
    # points at 0,0 or out of range are left out and counted, the rest kept
    bad = re.sub(rb'<trkpt lat="[\d.]+" lon="[\d.]+"', b'<trkpt lat="0" lon="0"', real, count=2)
    bad = re.sub(rb'<trkpt lat="45\.[\d]+"', b'<trkpt lat="95.1"', bad, count=1)
    (tmp_path / "bad.gpx").write_bytes(bad)
    track = read_gpx(tmp_path / "bad.gpx")
    assert track.dropped == {"at 0, 0 (no fix)": 2, "position out of range": 1}
    assert len(track.fixes) == len(read_gpx(tracks / "cerknicko-jezero.gpx").fixes) - 3


def _gpx(points) -> bytes:
    """A GPX file of ``(iso time, lat, lon)`` points, one segment."""
    pts = "".join(
        f'<trkpt lat="{lat}" lon="{lon}"><time>{t}</time></trkpt>' for t, lat, lon in points
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1">'
        f"<trk><trkseg>{pts}</trkseg></trk></gpx>"
    ).encode()


def test_a_dtd_is_refused_in_any_encoding_and_a_dense_logger_is_thinned(tmp_path):
    from datetime import datetime, timedelta

    body = _gpx([("2024-05-01T10:00:00Z", 46.0, 14.0)]).decode().split("?>", 1)[1]
    utf16 = (
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE gpx [<!ENTITY a "aaaa">]>' + body
    ).encode("utf-16")
    (tmp_path / "wide.gpx").write_bytes(utf16)
    with pytest.raises(MediaError, match="declares a DTD"):
        read_gpx(tmp_path / "wide.gpx")
    # 10 fixes a second for 15 minutes, standing still: one fix a second kept, one stay
    t0 = datetime(2024, 5, 1, 10, tzinfo=UTC)
    dense = [
        ((t0 + timedelta(seconds=k / 10)).isoformat(), 46.0 + (k % 7) * 1e-6, 14.0)
        for k in range(9000)
    ]
    (tmp_path / "dense.gpx").write_bytes(_gpx(dense))
    track = read_gpx(tmp_path / "dense.gpx")
    assert len(track.fixes) == 900
    assert [(s.kind, s.fixes) for s in segments(track)] == [("stay", 900)]


def test_one_glitch_does_not_end_a_stay_and_a_track_that_went_nowhere_is_refused(tmp_path):
    from perception.sources.tracks import plan_track_clips

    def at(minute, lat, lon):
        return Fix(1_700_000_000 + minute * 60.0, lat, lon)

    glitch = [at(m, 46.0, 14.0) for m in range(20)]
    glitch[9] = at(9, 46.003, 14.0)  # 330 m off, once
    assert [s.kind for s in segments(Track("g.gpx", tuple(glitch), {}))] == ["stay"]
    left = [at(m, 46.0, 14.0) for m in range(12)] + [
        at(m, 46.003 + (m - 12) * 1e-3, 14.0) for m in range(12, 20)
    ]
    assert [(s.kind, s.fixes) for s in segments(Track("g.gpx", tuple(left), {}))] == [
        ("stay", 12),
        ("move", 9),
    ]

    (tmp_path / "wait.gpx").write_bytes(
        _gpx([("2024-05-01T10:00:00Z", 46.0, 14.0), ("2024-05-01T10:03:00Z", 46.0, 14.0)])
    )
    with pytest.raises(MediaError, match=r"wait\.gpx.*never left 100 m .* nothing to remember"):
        plan_track_clips(tmp_path / "wait.gpx")


def test_a_re_exported_track_keeps_the_ids_of_what_did_not_change(tracks, tmp_path):
    from perception.sources.tracks import plan_track_clips

    real = (tracks / "korita-zbevnica.gpx").read_bytes()
    _, before = plan_track_clips(tracks / "korita-zbevnica.gpx")
    grown = real.replace(
        b"</trkseg>",
        b'<trkpt lat="45.449" lon="14.02"><time>2010-10-03T13:25:00Z</time></trkpt></trkseg>',
        1,
    )
    (tmp_path / "korita-again.gpx").write_bytes(grown)
    _, after = plan_track_clips(tmp_path / "korita-again.gpx")
    assert [c.clip_id for c, _ in before][:-1] == [c.clip_id for c, _ in after][
        :-1
    ]  # the last move grew
    assert before[-1][0].clip_id != after[-1][0].clip_id


def test_places_questions_are_read():
    assert when_at_a_place("When was I last in Paris?") == ("Paris", True)
    assert when_at_a_place("when did i last go to the Louvre") == ("Louvre", True)
    assert when_at_a_place("When did we visit Rakek, Slovenia?") == ("Rakek, Slovenia", False)
    assert when_at_a_place("When was I in Buzet last?") == ("Buzet", True)
    assert when_at_a_place("When did I last see Sarah?") is None  # a person, not a place
    assert same_place("ile-de-france", "Paris, Île-de-France, France")
    assert same_place("Paris, France", "Paris, Île-de-France, France")
    assert not same_place("Par", "Paris, Île-de-France, France")


def test_tracks_are_ingested_asked_about_digested_and_forgotten(
    tracks, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    folder = tmp_path / "gps"
    folder.mkdir()
    for name in ("korita-zbevnica.gpx", "cerknicko-jezero.gpx", "Mojstrovka.gpx"):
        shutil.copy(tracks / name, folder / name)
    store = tmp_path / "store"
    code, out, err = run_cli(capsys, "ingest", str(folder), "--store", str(store))
    # the walk with a clock never set is skipped, saying which file and why; the others stored
    assert code == 0 and "ingested 2 file(s): 9 new clip(s)" in out, out + err
    assert re.search(r"error: \S+Mojstrovka\.gpx: .*184 point\(s\): time not plausible", err), err
    assert (
        "korita-zbevnica.gpx: GPS track of 513 fix(es)" in err
        and "358 point(s) left out: no time" in err
    )

    code, out, _ = run_cli(
        capsys, "ask", "Where was I on 3 October 2010?", "--store", str(store), "--json"
    )
    answer = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and answer["answer"].startswith("Stayed in Buzet, Istria, Croatia")
    assert len(answer["citations"]) == 6 and {c["source"] for c in answer["citations"]} == {
        str(folder / "korita-zbevnica.gpx")
    }
    code, out, _ = run_cli(
        capsys, "ask", "When was I last in Rakek?", "--store", str(store), "--json"
    )
    answer = json.loads(out.strip().splitlines()[-1])
    assert "2010-08-05 16:15:46 UTC" in answer["answer"] and len(answer["citations"]) == 1
    assert answer["citations"][0]["source"].endswith("cerknicko-jezero.gpx")
    code, out, _ = run_cli(capsys, "ask", "Where was I on 4 October 2010?", "--store", str(store))
    assert "I don't know: no photo with a position and no GPS track in memory" in out

    code, out, _ = run_cli(capsys, "day", "2010-08-05", "--store", str(store), "--json")
    assert (
        "places: Cerknica, Slovenia (passed through), Rakek, Cerknica, Slovenia (stayed 17 min)"
        in out
    )
    code, out, _ = run_cli(capsys, "ask", "What did I do on 5 August 2010?", "--store", str(store))
    assert "Rakek, Cerknica, Slovenia (stayed 17 min)" in out and "cites clip" in out

    # a track has no frame or audio to show: said, not a server error
    from conftest import api_client
    from control.answer import OfflineAnswerer
    from embeddings.base import build_text_embedder
    from graph.store import Store
    from mnemo.serve.api import create_app
    from mnemo.serve.service import MemoryService

    opened = Store(store, build_text_embedder("hash"))
    client = api_client(create_app(MemoryService(opened, OfflineAnswerer(opened))))
    media = client.get(f"/media/{answer['citations'][0]['clip_id']}")
    assert media.status_code == 404 and "is a GPS track" in media.text
    assert (
        client.get("/digest/day", params={"date": "2010-08-05", "tz": "UTC"}).json()["places"][1][
            "stayed_s"
        ]
        > 0
    )
    # "where" questions that ask something a position does not answer are searched
    code, out, _ = run_cli(
        capsys, "ask", "Where was I working on 3 October 2010?", "--store", str(store), "--json"
    )
    assert not any(
        "memory(ies) with a position" in step
        for step in json.loads(out.strip().splitlines()[-1])["steps"]
    )

    # forgetting a time inside the stay at Rakek takes the whole stay, and only it
    assert files_holding(store, "Rakek")
    code, out, err = run_cli(
        capsys,
        "forget",
        "--store",
        str(store),
        "--from",
        "2010-08-05T16:00:00+00:00",
        "--to",
        "2010-08-05T16:01:00+00:00",
        "--yes",
    )
    assert code == 0, out + err
    code, out, _ = run_cli(capsys, "day", "2010-08-05", "--store", str(store))
    assert (
        "Rakek, Cerknica, Slovenia (stayed" not in out
        and "Rakek, Cerknica, Slovenia (passed through)" in out
    )
    code, out, err = run_cli(
        capsys,
        "forget",
        "--store",
        str(store),
        "--source",
        str(folder / "cerknicko-jezero.gpx"),
        "--yes",
    )
    assert code == 0, out + err
    assert files_holding(store, "Rakek") == [] and files_holding(store, "Cerknica") == []
    assert files_holding(store, "Buzet")  # the other track is still there


def test_a_night_away_counts_on_both_days(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    night = [
        (f"2024-05-0{1 + (h >= 24)}T{h % 24:02d}:{m:02d}:00Z", 48.8566, 2.3522)
        for h in range(20, 33)
        for m in (0, 30)
    ]  # Paris, 20:00 on 1 May to 08:30 on 2 May
    (tmp_path / "night.gpx").write_bytes(_gpx(night))
    store = tmp_path / "store"
    assert run_cli(capsys, "ingest", str(tmp_path / "night.gpx"), "--store", str(store))[0] == 0
    for day, stayed in (("2024-05-01", "stayed 240 min"), ("2024-05-02", "stayed 510 min")):
        code, out, _ = run_cli(capsys, "day", day, "--store", str(store))
        assert code == 0 and f"Paris, Île-de-France, France ({stayed})" in out, out
    code, out, _ = run_cli(capsys, "ask", "Where was I on 2 May 2024?", "--store", str(store))
    assert out.splitlines()[1].startswith("A: Stayed in Paris") and "cites clip" in out
