"""A second look at the speech where names and doubt are.

All speech is transcribed by a cheap first pass. Whisper writes names it was not told about as
common words, and a small model's doubt shows in its word probabilities, so only the windows where
it matters are decoded again with a wider beam (and a stronger model where one pays), the expected
names as hotwords and the turns before as prompt:

- ``name``: a name may be spoken there: after "I'm", "this is", "my name is", "hey", "thanks", ...;
  a vocative at the start or the end of a sentence ("Gina, ..." / "..., Gina."); a capitalised word
  inside a sentence; a word that sounds like an expected name without being written as one;
- ``unsure``: a word the first pass gave a probability under ``min_probability``;
- ``repeats``: a segment that says the same words over and over (a decoder caught in a loop).

Windows are whole first-pass segments (a sentence's context is what the beam needs), padded a
little and merged while they fit in one 30 s Whisper window. The second pass's segments replace the
first pass's inside a window, unless it heard something else: far fewer or more words, or mostly
the hotwords themselves (told a long list, Whisper may write the list instead of the speech); then,
as where it hears nothing, the first pass stays.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np

from perception.records import SpeechTurn, Word
from perception.speech.hints import SpeechHints, mostly_hints, sound_key

log = logging.getLogger(__name__)

# a cue, then a capitalised word: where a name is said ("I'm Sheila", "thanks, Mel")
_CUE = re.compile(
    r"\b(i'm|i am|this is|it's|my name is|name's|call me|called|meet|hey|hi|hello|"
    r"thanks|thank you|bye|goodbye|see you|dear|morning|evening|night)\b[,!.]?\s+[A-Z]",
    re.IGNORECASE,
)
# a capitalised word alone before a comma at the start ("Gina, ...") or after one at the end
# ("..., Gina.") that is no interjection
_VOCATIVE = re.compile(r"^\W*([A-Z]\w+),|,\s*([A-Z]\w+)\W*$")
_INTERJECTIONS = frozenset(
    "oh well okay ok yes yeah yep no nope so hey hi hello thanks wow sure right now then and but "
    "anyway alright also actually honestly look listen please sorry man dude guys everyone".split()
)
_SENTENCE_END = re.compile(r"[.?!…]['\")\]]*$")
_PAD_S = 0.25
_MIN_WINDOW_S = 1.0
_MAX_WINDOW_S = 29.0
_PROMPT_CHARS = 200


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float
    reasons: tuple[str, ...]


@dataclass
class SecondPassResult:
    turns: list[SpeechTurn]
    audio_s: float = 0.0  # audio decoded again
    note: str = ""  # the second pass could not run: why (the first pass stands)


def reasons_of(
    seg: SpeechTurn, hints: SpeechHints | None, min_probability: float
) -> tuple[str, ...]:
    """Why this first-pass segment deserves a second look (empty: it does not)."""
    reasons = []
    text = seg.text.strip()
    words = [w for w in seg.words if w.text.strip(".,!?;:\"'")]
    capitalised_inside = any(
        w.text.strip("\"'(")[:1].isupper()
        and w.text.strip(".,!?;:\"'") not in ("I", "I'm", "I'll", "I've", "I'd")
        and not _SENTENCE_END.search(prev.text)
        for prev, w in zip(words, words[1:])
    )
    hinted_keys = {sound_key(n) for n in hints.names} if hints else set()
    hinted = {n.casefold() for n in hints.names} if hints else set()
    sounds_hinted = any(
        sound_key(w.text) in hinted_keys and w.text.strip(".,!?;:\"'").casefold() not in hinted
        for w in words
    )
    vocative = any(
        w and w.casefold() not in _INTERJECTIONS
        for m in _VOCATIVE.finditer(text)
        for w in m.groups()
    )
    if _CUE.search(text) or vocative or capitalised_inside or sounds_hinted:
        reasons.append("name")
    if any(w.probability < min_probability for w in words):
        reasons.append("unsure")
    if _repeats(text):
        reasons.append("repeats")
    return tuple(reasons)


def _repeats(text: str) -> bool:
    """The same three words three times or more: a decoder loop, not speech."""
    words = re.findall(r"\w+", text.casefold())
    grams = [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]
    return any(grams.count(g) >= 3 for g in set(grams))


def choose_windows(
    segments: list[SpeechTurn],
    hints: SpeechHints | None,
    min_probability: float,
    duration_s: float,
) -> list[Window]:
    """The stretches to decode again, in time order, merged while they fit in one Whisper window."""
    windows: list[Window] = []
    for seg in segments:
        reasons = reasons_of(seg, hints, min_probability)
        if not reasons:
            continue
        start, end = max(0.0, seg.start_s - _PAD_S), min(duration_s, seg.end_s + _PAD_S)
        if end - start < _MIN_WINDOW_S:  # Whisper needs some sound around a word
            grow = (_MIN_WINDOW_S - (end - start)) / 2
            start, end = max(0.0, start - grow), min(duration_s, end + grow)
        # Whisper's encoder hears 30 s at a time, whatever the window holds: windows that fit in one
        # are decoded as one (two short windows cost two full encoder passes; measured 9.7 s for 25 s
        # of audio in 8 windows of a LoCoMo clip, against 3.2 s for the whole first pass)
        if windows and end - windows[-1].start_s <= _MAX_WINDOW_S:
            last = windows.pop()
            start = last.start_s
            end = max(end, last.end_s)
            reasons = tuple(dict.fromkeys(last.reasons + reasons))
        windows.append(Window(start, end, reasons))
    return windows


class SecondPass:
    """Decodes the chosen windows again with ``recognizer`` (a wider beam, or a stronger model; its
    VAD off: the first pass found the speech) and puts its segments in place of the first pass's
    there."""

    def __init__(self, recognizer, min_probability: float = 0.5) -> None:
        self.recognizer = recognizer
        self.min_probability = min_probability
        self._broken = ""  # why the model cannot be used: said once, then the first pass stands

    def redecode(
        self,
        audio: np.ndarray,
        sample_rate: int,
        segments: list[SpeechTurn],
        hints: SpeechHints | None = None,
    ) -> SecondPassResult:
        duration_s = len(audio) / sample_rate
        windows = choose_windows(segments, hints, self.min_probability, duration_s)
        result = SecondPassResult(list(segments))
        if not windows:
            return result
        if self._broken:
            result.note = self._broken
            return result
        hotwords = hints.hotwords() if hints else ""
        out: list[SpeechTurn] = []
        rest = list(segments)
        for n, w in enumerate(windows):
            before = [s for s in rest if (s.start_s + s.end_s) / 2 < w.start_s]
            inside = [s for s in rest if w.start_s <= (s.start_s + s.end_s) / 2 <= w.end_s]
            rest = [s for s in rest if (s.start_s + s.end_s) / 2 > w.end_s]
            out += before
            prompt = " ".join(s.text for s in out[-3:])[-_PROMPT_CHARS:]
            a, b = int(w.start_s * sample_rate), int(w.end_s * sample_rate)
            try:
                heard, _ = self.recognizer.transcribe(
                    audio[a:b], sample_rate, hotwords=hotwords or None, prompt=prompt or None
                )
            except (OSError, RuntimeError, ValueError) as e:
                # a missing or corrupt model: the first pass stands for this and every later clip
                self._broken = f"second speech pass unavailable ({e}); first pass only"
                log.warning("%s", self._broken)
                result.note = self._broken
                return result
            result.audio_s += w.end_s - w.start_s
            if not heard or not _plausible(inside, heard, hints):
                out += inside
                continue
            out += [_shifted(s, w.start_s, f"r{n}.{i}") for i, s in enumerate(heard)]
        result.turns = out + rest
        return result


def _plausible(
    first: list[SpeechTurn], second: list[SpeechTurn], hints: SpeechHints | None
) -> bool:
    """Whether the second pass heard the same speech: about as many words, and not mostly the
    hotwords themselves."""
    n1 = sum(len(s.text.split()) for s in first)
    n2 = sum(len(s.text.split()) for s in second)
    if not n1 or not (n1 / 2 <= n2 <= 2 * n1 + 3):
        return False
    before = {w.strip(".,!?;:\"'").casefold() for s in first for w in s.text.split()}
    return not mostly_hints(second, hints, before)


def _shifted(seg: SpeechTurn, offset_s: float, segment_id: str) -> SpeechTurn:
    return SpeechTurn(
        segment_id,
        seg.text,
        seg.start_s + offset_s,
        seg.end_s + offset_s,
        seg.language,
        tuple(
            Word(w.text, w.start_s + offset_s, w.end_s + offset_s, w.probability) for w in seg.words
        ),
    )
