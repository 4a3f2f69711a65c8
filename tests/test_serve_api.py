"""``mnemo serve``'s REST API on the demo store (real media, real models): every route, bad
parameters, unknown ids, /media confinement, the token, CORS, and reads while another process writes.
(The attacks on the door itself, over real HTTP: tests/test_serve_hosts.py.)"""

from __future__ import annotations

import io
import multiprocessing
import os
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from conftest import PEOPLE_T0, api_client, build_picture_store, run_cli
from control.answer import OfflineAnswerer
from factories import held
from graph.rows import ClipRow, Memory, content_id
from mnemo.serve.api import create_app
from mnemo.serve.auth import SESSION_COOKIE
from mnemo.serve.confirm import NONCE_LIFETIME_S
from mnemo.serve.service import MemoryService

pytestmark = pytest.mark.slow

DEMO_START = "2026-11-20T10:00:00Z"


@pytest.fixture(scope="module")
def service(demo_store):
    return MemoryService(demo_store, OfflineAnswerer(demo_store))


@pytest.fixture(scope="module")
def client(service):
    return api_client(create_app(service))


def test_health_people_and_ask(client):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["clips"] == 2 and health["memories"] > 10
    people = client.get("/people").json()
    assert {p["name"] for p in people} == {"Diane", "Sheila"}
    assert all(len(p["members"]) == 2 for p in people)  # a face and a voice each
    for p in people:  # the details of `mnemo people --json`
        assert len(p["voices"]) == len(p["faces"]) == 1 and p["clips"] == 2 and p["name_source"]
        assert p["quote"] and "<voice_" not in p["quote"] and p["first_seen"].endswith("Z")

    reply = client.post("/ask", json={"question": "Where is Sheila from?"})
    assert reply.status_code == 200
    body = reply.json()
    # what `mnemo ask --json` prints, and whether the reasoning model wrote it (here: offline)
    assert set(body) == {"answer", "citations", "steps", "reasoned", "closest"}
    assert body["reasoned"] is False and body["closest"] == []
    assert health["reasoning"] is False and health["writes"] is False
    assert "Chicago" in body["answer"] and body["citations"]
    cited = body["citations"][0]
    assert client.get(f"/clips/{cited['clip_id']}").status_code == 200

    early = client.post(
        "/ask", json={"question": "Where is Sheila from?", "before": DEMO_START}
    ).json()
    assert early["answer"].startswith("I don't know") and not early["citations"]


def test_search_filters(client, service):
    hits = client.get("/search", params={"q": "Chicago", "limit": 5}).json()
    assert hits and any("Chicago" in h["text"] for h in hits)
    assert all(h["score"] > 0 and h["time"].endswith("Z") for h in hits)

    sheila = client.get("/search", params={"q": "Chicago", "person": "Sheila"}).json()
    assert sheila and all("Sheila" in h["people"] for h in sheila)
    semantic = client.get("/search", params={"q": "where from", "kind": "semantic"}).json()
    assert semantic and {h["kind"] for h in semantic} == {"semantic"}

    second_clip = client.get("/timeline").json()["clips"][1]
    ranged = client.get(
        "/search",
        params={"q": "said", "from": second_clip["start_ts"], "to": second_clip["end_ts"]},
    ).json()
    assert ranged and all(h["end_ts"] >= second_clip["start_ts"] for h in ranged)
    assert client.get("/search", params={"q": "Chicago", "before": DEMO_START}).json() == []


def test_clip_and_timeline(client):
    timeline = client.get("/timeline").json()
    clips = timeline["clips"]
    assert [c["index"] for c in clips] == [0, 1] and not timeline["truncated"]
    assert timeline["to_ts"] == clips[-1]["end_ts"]  # default: the day up to the newest clip
    assert all(c["memories"] and set(c["people"]) == {"Diane", "Sheila"} for c in clips)
    assert all(m["clip_id"] == c["clip_id"] for c in clips for m in c["memories"])

    clip = client.get(f"/clips/{clips[0]['clip_id']}").json()
    assert "Diane in New Jersey" in clip["transcript"]
    assert (
        clip["media_location"].endswith("#t=0,30")
        and clip["media_url"] == f"/media/{clip['clip_id']}"
    )
    assert any(
        m["text"] == "Sheila is from Chicago." for m in clip["memories"]
    )  # names, not <voice_1>

    only_second = client.get(
        "/timeline", params={"from": clips[1]["start_ts"] + 1, "to": clips[1]["end_ts"]}
    ).json()
    assert [c["clip_id"] for c in only_second["clips"]] == [clips[1]["clip_id"]]
    one = client.get("/timeline", params={"from": clips[0]["start_ts"], "limit": 1}).json()
    assert len(one["clips"]) == 1 and one["truncated"]


def test_media_frame_and_audio(client):
    import cv2

    clip_id = client.get("/timeline").json()["clips"][0]["clip_id"]
    frame = client.get(f"/media/{clip_id}", params={"at": 15})
    assert frame.status_code == 200 and frame.headers["content-type"] == "image/jpeg"
    assert (
        frame.headers["cache-control"] == "no-store"
    )  # no copy in the browser to outlive a forget
    image = cv2.imdecode(np.frombuffer(frame.content, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[0] > 100 and image.std() > 10  # a picture, not a blank
    audio = client.get(f"/media/{clip_id}", params={"kind": "audio"})
    assert audio.status_code == 200 and audio.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(audio.content)) as w:
        assert w.getframerate() == 16000 and abs(w.getnframes() / 16000 - 30.0) < 0.5


@pytest.mark.parametrize(
    "path, params, says",
    [
        ("/search", {"q": "x", "limit": 0}, "limit"),
        ("/search", {"q": ""}, "q"),
        ("/search", {"q": "x", "kind": "dream"}, "kind"),
        ("/search", {"q": "x", "from": "yesterday-ish"}, "from"),
        (
            "/search",
            {"q": "x", "from": "2026-11-21T00:00:00Z", "to": "2026-11-20T00:00:00Z"},
            "ends",
        ),
        ("/timeline", {"limit": 100000}, "limit"),
        ("/media/{clip}", {"kind": "video"}, "kind"),
        ("/media/{clip}", {"at": 99}, "outside the clip"),
    ],
)
def test_bad_parameters_are_422_with_a_message(client, path, params, says):
    clip_id = client.get("/timeline").json()["clips"][0]["clip_id"]
    reply = client.get(path.format(clip=clip_id), params=params)
    assert reply.status_code == 422, reply.text
    assert says in reply.json()["error"]


def test_bad_ask_bodies_are_422(client):
    for body in ({"question": ""}, {}, {"question": "x", "before": "soon"}):
        reply = client.post("/ask", json=body)
        assert reply.status_code == 422 and reply.json()["error"].split(":")[0] in (
            "question",
            "before",
        ), body


def test_unknown_ids_are_404(client):
    for path in ("/clips/no-such-clip", "/media/no-such-clip", "/nowhere"):
        reply = client.get(path)
        assert reply.status_code == 404 and reply.json()["error"], path
    reply = client.get("/search", params={"q": "x", "person": "Bob"})
    assert reply.status_code == 404 and "known: " in reply.json()["error"]


@pytest.mark.parametrize(
    "path",
    [
        "/media/..%2F..%2F..%2Fetc%2Fpasswd",
        "/media/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/media/....//etc/passwd",
        "/media/..\\..\\etc\\passwd",
        "/static/..%2Fapi.py",
        "/static/%2e%2e%2fservice.py",
    ],
)
def test_media_and_static_refuse_paths(client, path):
    reply = client.get(path)
    assert reply.status_code == 404
    assert b"root:" not in reply.content and b"import" not in reply.content


def test_media_only_from_what_the_store_references(hash_store, tmp_path):
    import cv2

    from perception.capture.crypto import generate_key

    gone = ClipRow(
        "gone-clip", str(tmp_path / "moved.mp4"), "sha", 0, 0.0, 30.0, 1.8e9, 1.8e9 + 30, ""
    )
    shots = tmp_path / "shots"
    shots.mkdir()
    t0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC, on a 30 s boundary
    image = np.full((60, 80, 3), 200, np.uint8)
    cv2.putText(image, "hi", (10, 40), cv2.FONT_HERSHEY_SIMPLEX, 1, (0, 0, 0), 2)
    plain = shots / "a.png"
    cv2.imwrite(str(plain), image)
    os.utime(plain, (t0 + 5, t0 + 5))
    key = generate_key(tmp_path / "capture.key")
    from cryptography.fernet import Fernet

    secret = shots / "b.jpg.enc"
    secret.write_bytes(Fernet(key.read_bytes()).encrypt(b"\xff\xd8jpeg bytes"))
    os.utime(secret, (t0 + 20, t0 + 20))
    screen = ClipRow("screen-clip", str(shots), "sha2", 0, 0.0, 30.0, t0, t0 + 30, "")
    for row in (gone, screen):
        hash_store.commit_clip(
            row,
            [
                Memory(
                    content_id(row.clip_id),
                    "episodic",
                    "x",
                    row.clip_id,
                    row.source_path,
                    row.start_ts,
                    row.end_ts,
                )
            ],
            [],
        )
    client = api_client(create_app(MemoryService(hash_store, OfflineAnswerer(hash_store))))

    reply = client.get("/media/gone-clip")
    assert reply.status_code == 404 and "moved.mp4 is no longer there" in reply.json()["error"]
    reply = client.get("/media/screen-clip", params={"at": 4})
    assert reply.status_code == 200 and reply.content == plain.read_bytes()
    assert reply.headers["content-type"] == "image/png"
    assert client.get("/media/screen-clip", params={"kind": "audio"}).status_code == 404
    os.environ.pop("MNEMO_CAPTURE_KEY", None)
    reply = client.get("/media/screen-clip", params={"at": 21})  # no key: said, not crashed
    assert reply.status_code == 404 and "encrypted" in reply.json()["error"]
    os.environ["MNEMO_CAPTURE_KEY"] = key.read_text()
    try:
        reply = client.get("/media/screen-clip", params={"at": 21})
    finally:
        del os.environ["MNEMO_CAPTURE_KEY"]
    assert reply.status_code == 200 and reply.content == b"\xff\xd8jpeg bytes"


def test_token_on_every_route(service):
    client = api_client(create_app(service, token="s3cret-token"), signed_in=False)
    for path in (
        "/health",
        "/people",
        "/docs",
        "/openapi.json",
        "/static/timeline.js",
        "/timeline",
        "/digest/day",
    ):
        reply = client.get(path)
        assert reply.status_code == 401 and "token" in reply.json()["error"], path
    signin = client.get("/")  # the page asks for the token; nothing of the memory is in it
    assert signin.status_code == 401 and 'id="login"' in signin.text and "Sheila" not in signin.text
    assert client.post("/ask", json={"question": "Where is Sheila from?"}).status_code == 401
    for path, body in (
        ("/people/Sheila/name", {"name": "Mallory"}),
        ("/people/undo", {}),
        ("/people/merge", {"a": "Sheila", "b": "Diane"}),
        ("/people/Sheila/split", {"members": ["x"]}),
    ):
        assert client.post(path, json=body).status_code == 401, path
    assert client.get("/people/history").status_code == 401
    assert client.get("/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert (
        client.get("/health", params={"token": "s3cret-token"}).status_code == 401
    )  # the page only
    assert (
        client.get("/health", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    )
    page = client.get("/", params={"token": "s3cret-token"})
    assert page.status_code == 200 and SESSION_COOKIE in page.headers["set-cookie"]
    assert "s3cret-token" not in page.headers["set-cookie"]  # a signed session, not the token
    assert client.get("/people").status_code == 200  # the cookie the page got


def test_cors_closed_by_default(service):
    origin = {"Origin": "http://evil.example"}
    closed = api_client(create_app(service)).get("/health", headers=origin)
    assert "access-control-allow-origin" not in closed.headers
    opened = api_client(create_app(service, cors_origins=("http://evil.example",))).get(
        "/health", headers=origin
    )
    assert opened.headers["access-control-allow-origin"] == "http://evil.example"


@pytest.mark.parametrize(
    "token, why",
    [("hunter2", "7 characters long"), ("ab" * 20, "only 2 different characters")],
)
def test_a_token_set_by_hand_that_is_easy_to_guess_is_refused(
    capsys, monkeypatch, tmp_path, token, why
):
    monkeypatch.setenv("MNEMO_SERVE_TOKEN", token)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    code, _, err = run_cli(capsys, "serve", "--store", str(tmp_path))
    assert code == 2 and "too easy to guess" in err and why in err and token not in err
    assert not (tmp_path / "run").exists()  # nothing was written


def test_serve_off_loopback_needs_a_token(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("MNEMO_SERVE_TOKEN", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    code, _, err = run_cli(capsys, "serve", "--host", "0.0.0.0", "--store", str(tmp_path))
    assert code == 2 and "MNEMO_SERVE_TOKEN" in err
    code, _, err = run_cli(capsys, "serve", "--store", str(tmp_path / "missing"))
    assert code == 2 and "no store at" in err and "mnemo ingest" in err


def _write_clips(uri: str, n: int, per_clip: int, started) -> None:
    """Another process writing clips one at a time, as `mnemo ingest` does."""
    from embeddings.base import build_text_embedder
    from graph.store import Store

    store = Store(uri, build_text_embedder("hash"))
    started.set()
    for i in range(n):
        clip_id = f"live-{i:03d}"
        row = ClipRow(
            clip_id,
            "/rec.mp4",
            "sha",
            i,
            i * 30.0,
            30.0,
            1.9e9 + i * 30,
            1.9e9 + i * 30 + 30,
            f"words {i}",
        )
        memories = [
            Memory(
                content_id(clip_id, j),
                "episodic",
                f"event {j} of clip {i}",
                clip_id,
                "/rec.mp4",
                row.start_ts + j,
                row.start_ts + j + 1,
            )
            for j in range(per_clip)
        ]
        store.commit_clip(row, memories, [])
        time.sleep(0.05)


def test_reads_while_another_process_writes(tmp_path) -> None:
    from embeddings.base import build_text_embedder
    from graph.store import Store

    n, per_clip, window_s = 12, 4, 0.5
    uri = str(tmp_path / "store")
    store = Store(uri, build_text_embedder("hash"), read_consistency_s=window_s)
    client = api_client(create_app(MemoryService(store, OfflineAnswerer(store))))
    ctx = multiprocessing.get_context("spawn")
    started = ctx.Event()
    writer = ctx.Process(target=_write_clips, args=(uri, n, per_clip, started))
    writer.start()
    started.wait(60)
    seen: set[str] = set()
    deadline = time.monotonic() + 120
    while writer.is_alive() and time.monotonic() < deadline:
        for clip in client.get("/timeline", params={"from": 1.9e9, "to": 1.9e9 + 86400}).json()[
            "clips"
        ]:
            assert len(clip["memories"]) == per_clip, (
                f"torn read: {clip['clip_id']} shows {len(clip['memories'])}"
            )
            seen.add(clip["clip_id"])
    writer.join(30)
    assert writer.exitcode == 0
    assert seen, "no clip became visible while the writer ran"
    time.sleep(window_s + 0.1)  # the store's read-consistency window
    final = client.get("/timeline", params={"from": 1.9e9, "to": 1.9e9 + 86400}).json()["clips"]
    assert [c["clip_id"] for c in final] == [f"live-{i:03d}" for i in range(n)]
    assert client.get("/health").json()["clips"] == n


# ---- forget needs a person: a preview issues a single-use nonce, only that nonce forgets ---------

EVERYTHING = {"from": "1970-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z"}


def _forget_client(store):
    service = MemoryService(store, OfflineAnswerer(store))
    return service, api_client(create_app(service))


def test_one_forget_request_forgets_nothing(people_store):
    """What a prompt injection sends: one request with confirm, as the API took before."""
    _, client = _forget_client(people_store)
    before = held(people_store)
    reply = client.post("/forget", json={**EVERYTHING, "confirm": True})
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert "nothing was forgotten" in error and "confirm=true alone no longer forgets" in error
    assert "nonce" in error and "preview first" in error
    assert held(people_store) == before == (2, 6)


def test_forget_takes_the_previews_nonce_and_the_same_filter(people_store):
    _, client = _forget_client(people_store)
    preview = client.post("/forget", json={"clip": "people-clip-0"}).json()
    assert not preview["forgotten"] and preview["clips"] == 1 and preview["memories"] == 4
    assert (
        preview["span"] == [PEOPLE_T0, PEOPLE_T0 + 30]
        and preview["nonce_expires_in_s"] == NONCE_LIFETIME_S
    )
    assert len(preview["nonce"]) >= 32 and "agree" in preview["next_step"]
    nonce = preview["nonce"]

    def refused(body: dict, says: str) -> None:
        reply = client.post("/forget", json=body)
        assert reply.status_code == 422 and says in reply.json()["error"], reply.text
        assert (
            "nothing was forgotten" in reply.json()["error"]
            and "preview first" in reply.json()["error"]
        )
        assert held(people_store) == (2, 6)

    refused({"clip": "people-clip-0", "nonce": nonce[:-2] + "xx"}, "unknown or already used")
    refused({"clip": "people-clip-0", "nonce": ""}, "confirm=true alone")  # an empty nonce is none
    refused({"clip": "people-clip-1", "nonce": nonce}, "another request")  # another filter
    refused(
        {"clip": "people-clip-0", "nonce": nonce}, "unknown or already used"
    )  # spent by the try above
    nonce = client.post("/forget", json={"clip": "people-clip-0"}).json()["nonce"]
    refused(
        {"clip": "people-clip-0", "app": "firefox", "nonce": nonce}, "another request"
    )  # a narrower filter

    nonce = client.post("/forget", json={"clip": "people-clip-0"}).json()["nonce"]
    done = client.post("/forget", json={"clip": "people-clip-0", "nonce": nonce, "confirm": True})
    assert done.status_code == 200, done.text
    assert done.json()["forgotten"] and done.json()["clips"] == 1 and done.json()["nonce"] is None
    assert not people_store.has_clip("people-clip-0") and people_store.has_clip("people-clip-1")
    assert held(people_store) == (1, 2)
    again = client.post("/forget", json={"clip": "people-clip-1", "nonce": nonce})
    assert again.status_code == 422 and "unknown or already used" in again.json()["error"]
    assert held(people_store) == (1, 2)


def test_an_expired_nonce_forgets_nothing(people_store):
    service, client = _forget_client(people_store)
    now = [1000.0]
    service.confirmations.clock = lambda: now[0]
    nonce = client.post("/forget", json=EVERYTHING).json()["nonce"]
    now[0] += NONCE_LIFETIME_S + 1
    reply = client.post("/forget", json={**EVERYTHING, "nonce": nonce})
    assert reply.status_code == 422 and "expired" in reply.json()["error"]
    assert held(people_store) == (2, 6)
    nonce = client.post("/forget", json=EVERYTHING).json()[
        "nonce"
    ]  # in time: the same filter forgets
    now[0] += NONCE_LIFETIME_S - 1
    assert client.post("/forget", json={**EVERYTHING, "nonce": nonce}).json()["forgotten"]
    assert held(people_store) == (0, 0)


def test_a_nonce_is_for_what_the_preview_showed(people_store):
    """A clip ingested between the preview and the confirmation: the person did not see it."""
    _, client = _forget_client(people_store)
    preview = client.post("/forget", json=EVERYTHING).json()
    assert preview["clips"] == 2
    row = ClipRow(
        "late-clip",
        "/recordings/talk.wav",
        "sha-talk",
        2,
        60.0,
        30.0,
        PEOPLE_T0 + 60,
        PEOPLE_T0 + 90,
        "",
    )
    people_store.commit_clip(
        row,
        [
            Memory(
                content_id("late-clip"),
                "episodic",
                "later",
                "late-clip",
                row.source_path,
                row.start_ts,
                row.end_ts,
            )
        ],
        [],
    )
    reply = client.post("/forget", json={**EVERYTHING, "nonce": preview["nonce"]})
    assert reply.status_code == 422 and "changed since its preview" in reply.json()["error"]
    assert held(people_store) == (3, 7)


def test_nothing_to_forget_gives_no_nonce(people_store):
    _, client = _forget_client(people_store)
    reply = client.post(
        "/forget", json={"from": "2000-01-01T00:00:00Z", "to": "2000-01-02T00:00:00Z"}
    ).json()
    assert reply["clips"] == 0 and reply["nonce"] is None and "nothing" in reply["next_step"]


@pytest.mark.parametrize("days", [float("inf"), float("nan"), 1e309, 1_000_001, -1])
def test_an_age_past_reason_is_refused_by_the_filter_itself(days):
    """The bound holds for MCP as for REST: it is the filter's own, not a route's."""
    import pydantic

    from mnemo.serve.models import ForgetIn

    with pytest.raises(pydantic.ValidationError, match="older_than_days"):
        ForgetIn(older_than_days=days)
    assert ForgetIn(older_than_days=1_000_000).older_than_days == 1_000_000


# ---- the page's pictures: keyframes and faces, cut on demand and cached in the store ----------


def _image(reply):
    import cv2

    assert reply.status_code == 200, reply.text
    assert (
        reply.headers["content-type"] == "image/jpeg"
        and reply.headers["cache-control"] == "no-store"
    )
    image = cv2.imdecode(np.frombuffer(reply.content, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.std() > 10  # a picture, not a blank
    return image


def test_thumbnails_of_screens_and_video_cached_in_the_store(picture_store):
    client = api_client(create_app(MemoryService(picture_store, OfflineAnswerer(picture_store))))
    cache = Path(picture_store.uri) / ".thumbs"
    for clip_id in ("pic-screen", "pic-video"):
        assert _image(client.get(f"/thumb/{clip_id}")).shape[1] == 320
        assert [p.name for p in (cache / clip_id).iterdir()] == ["w320-mid.jpg"]
    # served from the cache afterwards: the picture kept, not the recording, answers
    (cache / "pic-video" / "w320-mid.jpg").write_bytes(
        (cache / "pic-screen" / "w320-mid.jpg").read_bytes()
    )
    assert (
        client.get("/thumb/pic-video").content
        == (cache / "pic-screen" / "w320-mid.jpg").read_bytes()
    )
    early, late = (_image(client.get("/thumb/pic-screen", params={"at": at})) for at in (1, 29))
    assert (
        np.abs(early.astype(int) - late.astype(int)).mean() > 5
    )  # another screenshot at another moment
    assert (cache / "pic-screen" / "w320-1.jpg").is_file()
    # kept to the second: a caller's ?at= cannot fill the cache with near copies of one frame
    one = (cache / "pic-screen" / "w320-1.jpg").read_bytes()
    for at in (1.2, 0.9, 1.49):
        assert client.get("/thumb/pic-screen", params={"at": at}).content == one
    assert sorted(p.name for p in (cache / "pic-screen").iterdir()) == [
        "w320-1.jpg",
        "w320-29.jpg",
        "w320-mid.jpg",
    ]
    sound = client.get("/thumb/pic-audio")
    assert sound.status_code == 404 and "sound only" in sound.json()["error"]
    assert not (cache / "pic-audio").exists()
    for path in ("/thumb/no-such-clip", "/thumb/..%2F..%2Fetc", "/face/nobody"):
        assert client.get(path).status_code == 404, path
    assert client.get("/thumb/pic-video", params={"at": 99}).status_code == 422
    assert not [p for p in Path(picture_store.uri).parent.rglob("*.jpg") if cache not in p.parents]
    # as private as the clip: the token or the page's session, like /media
    stranger = api_client(
        create_app(MemoryService(picture_store, OfflineAnswerer(picture_store))), signed_in=False
    )
    for path in ("/thumb/pic-video", "/face/voice_1"):
        assert stranger.get(path).status_code == 401, path


def test_a_forgotten_clips_pictures_go_with_it(picture_store):
    client = api_client(create_app(MemoryService(picture_store, OfflineAnswerer(picture_store))))
    cache = Path(picture_store.uri) / ".thumbs"
    media = Path(picture_store.uri).parent / "media"
    originals = [p for p in media.rglob("*") if p.is_file()]
    originals.append(Path(picture_store.get_clip("pic-video")["source_path"]))
    before = {p: p.read_bytes() for p in originals}
    _image(client.get("/thumb/pic-screen"))
    _image(client.get("/thumb/pic-video"))
    nonce = client.post("/forget", json={"clip": "pic-screen"}).json()["nonce"]
    assert client.post("/forget", json={"clip": "pic-screen", "nonce": nonce}).json()["forgotten"]
    # the user's screenshots and recording, which mnemo did not write, come out byte for byte
    assert len(before) >= 5 and {p: p.read_bytes() for p in originals} == before
    assert client.get("/thumb/pic-screen").status_code == 404
    assert not (cache / "pic-screen").exists() and (cache / "pic-video").is_dir()
    # a forget the server did not see (`mnemo forget` while it was down): gone at the next start
    (cache / "pic-gone").mkdir()
    (cache / "pic-gone" / "w320-mid.jpg").write_bytes(b"x")
    create_app(MemoryService(picture_store, OfflineAnswerer(picture_store)))
    assert not (cache / "pic-gone").exists() and (cache / "pic-video").is_dir()


def test_pictures_of_encrypted_screenshots_are_not_kept(hash_store, tmp_path, monkeypatch):
    from cryptography.fernet import Fernet

    from graph.rows import ClipRow

    key = Fernet.generate_key()
    monkeypatch.setenv("MNEMO_CAPTURE_KEY", key.decode())
    build_picture_store(hash_store, tmp_path / "media", tmp_path / "none.mp4")
    plain, secret = tmp_path / "media" / "shots", tmp_path / "secret"
    secret.mkdir()
    for path in plain.glob("*.png"):  # as capture writes them: the frame and its sidecar encrypted
        (secret / (path.name + ".enc")).write_bytes(Fernet(key).encrypt(path.read_bytes()))
        side = path.with_name(path.name + ".json")
        (secret / (path.name + ".enc.json")).write_bytes(Fernet(key).encrypt(side.read_bytes()))
    row = hash_store.get_clip("pic-screen")
    hash_store.commit_clip(
        ClipRow(
            "pic-secret",
            str(secret),
            "sha-secret",
            0,
            0.0,
            30.0,
            row["start_ts"],
            row["end_ts"],
            "",
        ),
        [],
        [],
        [],
    )
    client = api_client(create_app(MemoryService(hash_store, OfflineAnswerer(hash_store))))
    assert _image(client.get("/thumb/pic-secret")).shape[1] == 320
    assert not (Path(hash_store.uri) / ".thumbs" / "pic-secret").exists()


def test_a_face_is_cropped_only_from_a_frame_no_other_face_was_seen_in(hash_store):
    from mnemo.serve.thumbs import face_moments

    t0, clip = 1_800_000_000.0, "faces-clip"

    def seen(face, frames, text=None, faces=None):
        ids = tuple(f"{clip}:f{i}.{j}" for i, j in frames)
        return Memory(
            content_id(clip, face, text or ""),
            "episodic",
            text or f"<{face}> is visible",
            clip,
            "call.mp4",
            t0 + frames[0][0],
            t0 + frames[-1][0],
            faces or (face,),
            ids,
        )

    hash_store.insert_memories(
        [
            seen("face_1", [(2, 0), (5, 0), (9, 1)]),  # alone in frame 2; beside face_2 in frame 9
            seen(
                "face_2", [(6, 0), (9, 0), (15, 0)]
            ),  # beside face_1 in frame 9; alone in frame 15
            seen("face_3", [(5, 1), (9, 2)]),  # never alone
            # a memory naming two faces is no sighting: its first observation is face_2's
            seen(
                "face_2", [(6, 0), (15, 0)], "<face_2> hands <face_1> a cup", ("face_1", "face_2")
            ),
        ]
    )

    def at(faces):
        return [(m.text, round(ts - t0)) for m, ts in face_moments(hash_store, faces)]

    assert at(["face_1"]) == [("<face_1> is visible", 2)]
    assert at(["face_2"]) == [("<face_2> is visible", 6), ("<face_2> is visible", 15)]
    assert at(["face_3"]) == []  # a card shows initials rather than maybe someone else
    assert at(["face_1", "face_3", "voice_1"]) == [
        ("<face_1> is visible", 2)
    ]  # one person, two faces
    assert at(["voice_1"]) == []


def test_a_persons_face_is_cropped_from_their_clip(client, service):
    from mnemo.serve.thumbs import _faces

    people = client.get("/people").json()
    faces = {}
    for p in people:
        faces[p["name"]] = face = _image(client.get(f"/face/{p['id']}"))
        assert face.shape[:2] == (160, 160)
        assert len(_faces(face)) == 1, f"no face in the crop of {p['name']}"
        assert client.get(f"/face/{p['name']}").content == client.get(f"/face/{p['id']}").content
    assert (
        np.abs(faces["Diane"].astype(int) - faces["Sheila"].astype(int)).mean() > 20
    )  # two people, two faces
    assert len(list((Path(service.store.uri) / ".thumbs").rglob("face_*.jpg"))) == 2
