"""The sections of the config tree (``mnemo.config``) after perception: ``[memorize]`` (people
and redaction), ``[llm]`` (the chat endpoint), ``[graph]`` (the store, its embedder and retention),
``[people]`` (who "I" is, the names to expect) and ``[control]`` (how questions are answered).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class MemorizeConfig(BaseModel):
    """``[memorize]``: how faces and voices become people, and what is kept out of memories."""

    face_threshold_dlib: float = Field(
        0.92,
        description=(
            "Cosine similarity a face needs to a known person's samples to be that person, else a new person "
            "(dlib; memorize/identity.py). Higher splits look-alikes, lower merges more."
        ),
    )
    face_threshold_insightface: float = Field(
        0.45,
        description=(
            "Cosine similarity a face needs to a known person's samples to be that person, else a new person "
            "(insightface)."
        ),
    )
    voice_threshold: float = Field(
        0.84,
        description=(
            "Cosine similarity a clip's speaker needs to a known voice's profile (the mean of everything heard of "
            "it) to be that voice, else a new one."
        ),
    )
    voice_same_similarity: float = Field(
        0.86,
        description=(
            "A clip's speaker whose own voice is taken by another speaker of the clip joins it when this alike and "
            "0.1 closer to it than to any other voice (one voice split in two by clustering)."
        ),
    )
    voice_merge_similarity: float = Field(
        0.93,
        description=(
            "Two voices whose profiles are this alike are one person: merged, with the similarity as evidence."
        ),
    )
    min_voice_s: float = Field(
        2.5,
        description=(
            "Seconds of speech a clip's speaker needs to found a new voice (a person); shorter ones are mostly the "
            "windows where two voices meet."
        ),
    )
    max_samples: int = Field(
        8,
        ge=1,
        description=(
            "Face or voice samples kept per person to match against (the most diverse ones)."
        ),
    )
    redact: list[str] = Field(
        ["secrets", "cards", "ibans", "passwords"],
        description=(
            "Kinds of text kept out of memory (memorize/redact.py): secrets, cards, ibans, passwords, emails, "
            "phones."
        ),
    )
    phone_region: str = Field(
        "US",
        description=(
            'With "phones" redacted: the region (e.g. US, DE) as whose numbers phone numbers without a +country '
            "prefix are read."
        ),
    )
    writer: Literal["offline", "llm"] = Field(
        "offline",
        description=(
            '"offline": memories are written here; "llm": the [llm] endpoint writes them too (transcripts and '
            "screen text are sent to it)."
        ),
    )


class LLMConfig(BaseModel):
    """``[llm]``: an OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI, …). The API
    key is read from the environment variable named by ``api_key_env``, never from a file."""

    base_url: str = Field(
        "", description=("The endpoint, e.g. http://localhost:8000/v1; empty: no LLM endpoint.")
    )
    model: str = Field("", description="The model name sent to the endpoint.")
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description=("The environment variable holding the API key (never read from a file)."),
    )
    allow_plain_http_key: bool = Field(
        False,
        description=(
            "The key goes only to https or loopback endpoints; true also sends it over plain http elsewhere."
        ),
    )
    log_prompts: bool = Field(
        False,
        description=("With -v, log prompts and replies (they hold transcripts and screen text)."),
    )
    timeout_s: float = Field(
        60.0, gt=0, description="Seconds to wait for one reply before trying again."
    )
    max_retries: int = Field(2, ge=0, description="Tries after a failed or timed-out request.")
    max_wait_s: float = Field(
        60.0,
        gt=0,
        description=(
            "The longest wait between tries, in seconds, a server's Retry-After included."
        ),
    )
    vision: bool = Field(
        True,
        description=(
            "The model takes images; false (a text-only model): the LLM writer sends text only."
        ),
    )
    judge_model: str = Field(
        "",
        description=(
            "`mnemo bench --judge`: the judge model on this endpoint; empty: `model` (the LoCoMo paper's judge: "
            "gpt-4o-2024-11-20)."
        ),
    )


class GraphConfig(BaseModel):
    """``[graph]``: the store of memories, its text embedder, and how long it keeps things."""

    store: str = Field(
        "./mnemo-data",
        description=(
            "The store folder: clips, memories, people and their indexes. `--store` overrides it."
        ),
    )
    text_embedder: Literal["mpnet", "minilm", "hash"] = Field(
        "mpnet",
        description=(
            '"mpnet": all-mpnet-base-v2 (768-d); "minilm": all-MiniLM-L6-v2 (384-d, faster, finds less); "hash": '
            "word overlap only, no model (tests). A store keeps the embedder it was built with."
        ),
    )
    text_device: str = Field(
        "auto",
        description=(
            'Where the text embedder runs: "auto" (a GPU when torch sees one), "cpu", "cuda:1", ...'
        ),
    )
    text_dtype: Literal["auto", "bfloat16", "float16", "float32"] | None = Field(
        None,
        description=(
            "The embedder weights' dtype; unset: the backend's own (mpnet \"auto\": bfloat16 where the CPU or GPU "
            "computes in it natively and torch is installed, else float32; minilm float32). Vectors are float32 "
            'either way. bfloat16, float16, a GPU and text_runtime "torch" need the extra mnemo[torch].'
        ),
    )
    text_runtime: Literal["auto", "torch", "onnx"] = Field(
        "auto",
        description=(
            '"auto": ONNX Runtime for float32 on the CPU (the same vectors, faster), torch otherwise; "torch" or '
            '"onnx" to choose.'
        ),
    )
    retention_days: float = Field(
        0.0,
        ge=0,
        description=(
            "Forget clips (memories, media and all) older than this many days; 0 keeps everything. Applied by "
            "`mnemo capture --ingest` after each ingest and by `mnemo forget --apply-retention`."
        ),
    )
    max_store_gb: float = Field(
        0.0,
        ge=0,
        description=(
            "The store's size on disk at most, in GB: the oldest clips are forgotten until it fits. 0: no cap."
        ),
    )


class PeopleConfig(BaseModel):
    """``[people]``: who "I" is, and the names to expect."""

    me: str = Field(
        "",
        description=(
            'Who you are when not marked with `mnemo people me ID` (which wins): an id (voice_3) or a name. "I", '
            '"me" and "my" in a question mean this person; empty: nobody until you mark yourself.'
        ),
    )
    contacts: str = Field(
        "",
        description=(
            "A contact list: a vCard file (.vcf) or a text file of one name a line. Its names are told to the "
            'speech recogniser, spelled as written there ("Jon" over "John"); they name nobody without '
            "being heard. Empty: none."
        ),
    )


class ControlConfig(BaseModel):
    """``[control]``: how questions are answered."""

    agent: Literal["offline", "llm", "local"] = Field(
        "offline",
        description=(
            '"offline": the planner answers here; "llm": the [Search]/[Answer] loop on the [llm] endpoint '
            '(questions and memories are sent to it); "local": answers reasoned by reason_model on '
            "this machine (as `mnemo ask --reason`; a configured [llm] endpoint is used instead)."
        ),
    )
    reason_model: Literal["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"] = Field(
        "qwen2.5-coder-1.5b-instruct",
        description=(
            'The packaged model that reasons (`--reason`, agent "local", `mnemo llm serve`): the '
            "1.5B (1.1 GB, about 10 s a question on 2 cores) or the 0.5B (0.5 GB, faster, weaker)."
        ),
    )
    reason_idle_s: float = Field(
        600.0,
        gt=0,
        description=(
            "The reasoning model served here (no [llm] endpoint, no `mnemo llm serve` running) is "
            "started by the first question and stopped after this many seconds without one, so "
            "`mnemo serve` and `mnemo mcp` hold its memory only while questions come."
        ),
    )
    top_k: int = Field(
        10, ge=1, description=("Memories ranked by the planner per search (and shown to the LLM).")
    )
    max_rounds: int = Field(
        5,
        ge=1,
        description=("LLM loop: search rounds before the answer is forced (in the last round)."),
    )
    planner_rounds: int = Field(
        2, ge=1, description="Offline planner: expand and re-rank rounds at most."
    )
    expand: int = Field(
        8,
        ge=0,
        description=(
            "Offline planner: the best memories whose neighbours each round reads; 0 reads none."
        ),
    )
