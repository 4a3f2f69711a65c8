"""Builds the model backends and the store from the config tree (the only place that does)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from embeddings.base import build_text_embedder
from graph.store import Store
from llm.client import ChatClient
from memorize.identity import MatchPolicy
from memorize.writer_llm import LLMWriter
from mnemo.config import (
    ControlConfig,
    GraphConfig,
    LLMConfig,
    MemorizeConfig,
    PeopleConfig,
    PerceptionConfig,
)
from perception.faces.stage import FacePolicy
from perception.observe import Perceivers
from perception.onnx_models import set_threads as set_model_threads
from perception.registry import build
from perception.speech.second_pass import SecondPass
from perception.weights import installed, usable_cpus

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from llm.client import JsonChat
    from llm.on_demand import OnDemandServer


def faces_backend_name(cfg: PerceptionConfig) -> str:
    """``auto`` picks insightface when its pack is on disk and its package (mnemo[insightface]) is
    installed, dlib otherwise."""
    if cfg.faces_backend != "auto":
        return cfg.faces_backend
    pack = Path(cfg.insightface_root).expanduser() / "models" / cfg.insightface_pack
    if not any(pack.glob("*.onnx")):
        return "dlib"
    if not installed("insightface"):
        log.info(
            "faces by dlib: the insightface pack in %s needs the insightface package "
            "(`pip install 'mnemo[insightface]'`)",
            pack,
        )
        return "dlib"
    return "insightface"


def chat_client(cfg: LLMConfig) -> ChatClient:
    return ChatClient(
        cfg.base_url,
        cfg.model,
        os.environ.get(cfg.api_key_env) or None,
        cfg.timeout_s,
        cfg.max_retries,
        allow_plain_http_key=cfg.allow_plain_http_key,
        log_content=cfg.log_prompts,
        key_name=f"the key in ${cfg.api_key_env}",
        max_wait_s=cfg.max_wait_s,
    )


def llm_or_packaged(cfg: LLMConfig, stack, progress) -> ChatClient:
    """A client of the configured [llm] endpoint, or, with none configured, of the packaged model
    served on loopback for as long as ``stack`` (an ``ExitStack``) lasts."""
    if cfg.base_url:
        return chat_client(cfg)
    from llm.local import LocalServer
    from mnemo.llm_cli import packaged_llm

    server = stack.enter_context(LocalServer(packaged_llm()))
    progress(f"no [llm] endpoint configured: serving {server.name} here at {server.base_url}")
    return ChatClient(server.base_url, server.name, server.api_key, timeout_s=120.0)


def build_ocr(cfg: PerceptionConfig, threads: int | None = None):
    """The configured on-screen text reader, or None."""
    if cfg.ocr_backend == "none":
        return None
    return build(
        "ocr",
        cfg.ocr_backend,
        threads=threads or cfg.threads or usable_cpus(),
        detect_min_side=cfg.ocr_detect_min_side,
        detect_max_side=cfg.ocr_detect_max_side,
        word_gaps=cfg.ocr_word_gaps,
    )


def contact_names(cfg: PeopleConfig, say: Callable[[str], None]) -> tuple[str, ...]:
    """The names of ``[people] contacts`` (none when unset); a file that cannot be read or holds
    no name is said, and ingest goes on without it."""
    if not cfg.contacts:
        return ()
    from perception.speech.hints import read_contacts

    names, note = read_contacts(cfg.contacts)
    if note:
        say(f"note: {note}")
    return names


def build_asr(cfg: PerceptionConfig, threads: int, second: bool = False):
    """The configured speech recogniser: the first pass, or (``second``) the second pass's model
    and beam with its voice activity detection off (the first pass found the speech)."""
    return build(
        "asr",
        "faster-whisper",
        model=cfg.asr_second_model if second else cfg.asr_model,
        device=cfg.device,
        compute_type=cfg.asr_compute_type,
        beam_size=cfg.asr_second_beam_size if second else cfg.asr_beam_size,
        cpu_threads=threads,
        vad_filter=not second,
    )


def build_second_pass(cfg: PerceptionConfig, threads: int) -> SecondPass | None:
    """The second speech pass (``perception.speech.second_pass``), or None when it is off. Its
    model loads when it first hears something; a missing or corrupt one leaves the first pass."""
    if not cfg.asr_second_model:
        return None
    return SecondPass(build_asr(cfg, threads, second=True), cfg.asr_second_min_probability)


def build_perceivers(
    cfg: PerceptionConfig, llm: LLMConfig | None = None, keep_images: bool = False
) -> Perceivers:
    """The perception backends; ``keep_images`` keeps frames and face crops for an LLM writer."""
    faces = faces_backend_name(cfg)
    log.info(
        "perception: asr=faster-whisper(%s%s) speaker=%s faces=%s image=%s ocr=%s caption=%s",
        cfg.asr_model,
        f", second pass {cfg.asr_second_model}" if cfg.asr_second_model else "",
        cfg.speaker_backend,
        faces,
        cfg.image_backend,
        cfg.ocr_backend,
        cfg.caption_backend,
    )
    face_kwargs = (
        {"root": cfg.insightface_root, "pack": cfg.insightface_pack, "device": cfg.device}
        if faces == "insightface"
        else {}
    )
    image = None
    if cfg.image_backend == "open-clip":
        image = build(
            "image",
            "open-clip",
            model=cfg.open_clip_model,
            checkpoint=cfg.open_clip_checkpoint,
            device=cfg.device,
        )
    elif cfg.image_backend != "none":
        image = build("image", cfg.image_backend, device=cfg.device, runtime=cfg.model_runtime)
    captioner = None
    if cfg.caption_backend == "vlm":
        captioner = build("caption", "vlm", client=chat_client(llm or LLMConfig()))
    cluster_distance = (
        cfg.face_cluster_distance_insightface
        if faces == "insightface"
        else cfg.face_cluster_distance_dlib
    )
    threads = cfg.threads or usable_cpus()
    set_model_threads(threads)  # torch's and ONNX Runtime's: the speaker, image and text models
    return Perceivers(
        asr=build_asr(cfg, threads),
        second_pass=build_second_pass(cfg, threads),
        hint_first_pass=cfg.asr_hotwords,
        speaker=build("speaker", cfg.speaker_backend, device=cfg.device, runtime=cfg.model_runtime),
        faces=build("faces", faces, **face_kwargs),
        image=image,
        ocr=build_ocr(cfg, threads),
        captioner=captioner,
        frame_fps=cfg.frame_fps,
        decode_threads=threads,
        faces_beside=threads > 1,
        diarize_max_distance=cfg.diarize_max_distance,
        diarize_min_speaker_s=cfg.diarize_min_speaker_s,
        face_policy=FacePolicy(cfg.face_min_px, cfg.face_min_sharpness, cluster_distance),
        duplicate_max_diff=cfg.duplicate_max_diff,
        ocr_min_text_fraction=cfg.ocr_min_text_fraction,
        ocr_every_s=cfg.ocr_every_s,
        keep_images_px=448 if keep_images else 0,
    )


def perceivers_factory(
    cfg: PerceptionConfig, llm: LLMConfig | None = None, keep_images: bool = False
) -> Callable[[int], Perceivers]:
    """``build_perceivers`` as a picklable recipe for another process (a ``ray_jobs`` actor), which
    calls it with the CPUs it was given: every library's threads are set to them."""
    return partial(_perceivers_on, cfg, llm, keep_images)


def _perceivers_on(
    cfg: PerceptionConfig, llm: LLMConfig | None, keep_images: bool, threads: int
) -> Perceivers:
    return build_perceivers(
        cfg.model_copy(update={"threads": threads}), llm, keep_images=keep_images
    )


def build_llm_writer(cfg: MemorizeConfig, llm: LLMConfig) -> LLMWriter | None:
    return LLMWriter(chat_client(llm), images=llm.vision) if cfg.writer == "llm" else None


def build_answerers(
    cfg: ControlConfig, store: Store, client: ChatClient | None = None, me: str = ""
):
    """(the offline answerer, the LLM loop on ``client`` searching through the same planner, or
    None without a client). ``me``: ``[people] me``, the owner when none is marked in the store."""
    from control.agent import LLMAgent
    from control.answer import OfflineAnswerer
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools

    planner = OfflinePlanner(
        MemoryTools(store, me), k=cfg.top_k, rounds=cfg.planner_rounds, expand=cfg.expand
    )
    return OfflineAnswerer(store, planner), (
        LLMAgent(planner, client, max_rounds=cfg.max_rounds) if client else None
    )


def build_agent(cfg: ControlConfig, llm: LLMConfig, store: Store, me: str = ""):
    """The configured question answerer: the offline planner, the LLM loop searching through it,
    or (agent "local") the reasoner (``me``: as ``build_answerers``)."""
    if cfg.agent == "local":
        return build_reasoner(cfg, llm, store, me)
    offline, agent = build_answerers(
        cfg, store, chat_client(llm) if cfg.agent == "llm" else None, me
    )
    return agent or offline


def reasoning_client(
    cfg: ControlConfig, llm: LLMConfig, progress: Callable[[str], None] = log.info
) -> tuple[JsonChat, OnDemandServer | None]:
    """Who reasons, and what to close when done (None when the server is not ours): the
    configured [llm] endpoint; else a running `mnemo llm serve` of ``reason_model``; else
    ``reason_model`` served here (fetched and joined now, on first use) from the first question
    until ``reason_idle_s`` without one."""
    if llm.base_url:  # memories go where the user configured: say where
        progress(f"reasoning with the [llm] endpoint {llm.base_url} (model {llm.model})")
        return chat_client(llm), None
    from llm.local import reasoning_threads
    from llm.on_demand import OnDemandServer
    from mnemo.llm_cli import model_file, running_server

    timeout = max(llm.timeout_s, 300.0)  # a CPU reads a 1,300-token prompt in tens of seconds
    note = running_server(cfg.reason_model)
    if note is not None:
        progress(f"reasoning with {note['model']} at {note['base_url']} (mnemo llm serve)")
        return ChatClient(note["base_url"], note["model"], note["api_key"], timeout, 1), None
    served = OnDemandServer(
        model_file(cfg.reason_model, progress),
        threads=reasoning_threads(),
        timeout_s=timeout,
        idle_s=cfg.reason_idle_s,
        progress=progress,
    )
    return served, served


def build_reasoner(
    cfg: ControlConfig, llm: LLMConfig, store: Store, me: str = "", progress=log.info
):
    """``control.reason.Reasoner`` on the offline planner and ``reasoning_client``."""
    from control.reason import Reasoner

    offline, _ = build_answerers(cfg, store, None, me)
    client, server = reasoning_client(cfg, llm, progress)
    return Reasoner(offline.planner, client, keep=server)


def build_redactor(cfg: MemorizeConfig):
    from memorize.redact import Redactor

    return Redactor(tuple(cfg.redact), cfg.phone_region)


def match_policies(cfg: MemorizeConfig, faces_backend: str) -> tuple[MatchPolicy, MatchPolicy]:
    face_threshold = (
        cfg.face_threshold_insightface
        if faces_backend == "insightface"
        else cfg.face_threshold_dlib
    )
    return (
        MatchPolicy(face_threshold, cfg.max_samples),
        MatchPolicy(
            cfg.voice_threshold,
            cfg.max_samples,
            same_similarity=cfg.voice_same_similarity,
            merge_similarity=cfg.voice_merge_similarity,
            min_found_s=cfg.min_voice_s,
            by_profile=True,
            merge_min_samples=1,
        ),
    )


def text_embedder(cfg: GraphConfig, name: str | None = None, lean: bool = False):
    """The text embedder ``name`` (default ``cfg.text_embedder``) on ``cfg``'s device, dtype and
    runtime; ``lean``: in the least memory (a process that runs all day)."""
    name = name or cfg.text_embedder
    if name == "hash":  # no model: nothing to place
        return build_text_embedder(name)
    return build_text_embedder(
        name,
        lean=lean,
        device=cfg.text_device,
        runtime=cfg.text_runtime,
        **({"dtype": cfg.text_dtype} if cfg.text_dtype else {}),
    )


def open_store(cfg: GraphConfig, store: str | Path | None = None, lean: bool = False) -> Store:
    return Store(store or cfg.store, text_embedder(cfg, lean=lean))
