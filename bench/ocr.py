"""``mnemo bench ocr``: reading screen text with its word boundaries, on screens whose text is known.

The screens (``bench/ocr_screens.py``) are whole desktop frames rendered by xterm, Chromium and
xmessage under Xvfb. Each reference line is compared with the OCR text closest to it
(``bench.metrics.closest_lines``), and the bench reports:

- word accuracy with spaces: the share of reference words found as a whole token (a word read with
  a space inside, glued to its neighbour or misspelt is not found), for terminal and UI text apart,
  and for the terminal at 12-16 px, the sizes the issue's target names;
- the merged/split rate: reference word boundaries lost plus boundaries invented inside words, per
  reference word (``bench.metrics.space_errors``);
- the character error rate over all lines, and milliseconds of OCR per frame (the reader warmed up);
- search: the share of queries (each reference word, each two adjacent words) that a full-text
  search answers with the line read for them, with the store's forgiving index (``search_found``:
  words joined, ``graph/spelling.py``) and on the plain text (``search_found_plain``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.metrics import closest_lines, edit_distance, space_errors, words_found
from bench.ocr_screens import Screen, screen_folder, screens

TARGETS = {
    "word_accuracy_terminal_12_16": (">=", 0.98),
    "word_accuracy_ui": (">=", 0.97),
    "merged_split_rate": ("<=", 0.01),
}


@dataclass
class ScreenResult:
    screen: Screen
    read: list[str]  # the OCR lines, in reading order
    ms: float
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (reference, closest read text)


@dataclass
class OcrReport:
    figures: dict[str, float]
    results: list[ScreenResult]

    def table(self) -> str:
        rows = [
            f"{'screen':24} {'lines':>5} {'words':>7} {'merged':>6} {'split':>5} {'CER':>6} {'ms':>6}"
        ]
        for r in self.results:
            found, words = _sum(words_found(a, b) for a, b in r.pairs)
            merged, split = _sum(space_errors(a, b) for a, b in r.pairs)
            edits, chars = _sum((edit_distance(a, b), len(a)) for a, b in r.pairs)
            rows.append(
                f"{r.screen.name:24} {len(r.pairs):5d} {found:3d}/{words:<3d} {merged:6d} {split:5d} "
                f"{edits / chars:6.3f} {r.ms:6.0f}"
            )
        return "\n".join(rows)

    def misreads(self, limit: int = 30) -> list[str]:
        """Reference lines not read word for word, with what was read."""
        out = []
        for r in self.results:
            for ref, hyp in r.pairs:
                if words_found(ref, hyp)[0] < words_found(ref, ref)[0]:
                    out.append(f"{r.screen.name}: {ref!r} -> {hyp!r}")
        return out[:limit]


def format_report(report: OcrReport) -> str:
    from bench.metrics import meets

    f = report.figures
    lines = [
        report.table(),
        "",
        f"{f['lines']} lines, {f['words']} words; OCR {f['ms_per_frame']:.0f} ms a 1280x800 frame",
        "",
    ]
    for name in (
        "word_accuracy_terminal",
        "word_accuracy_terminal_12_16",
        "word_accuracy_ui",
        "merged_split_rate",
        "ocr_cer",
        "search_found_plain",
        "search_found",
    ):
        target = TARGETS.get(name)
        verdict = (
            f"  target {target[0]} {target[1]}: {'met' if meets(f[name], *target) else 'MISSED'}"
            if target
            else ""
        )
        lines.append(f"{name:30} {f[name]:.4f}{verdict}")
    lines.append(f"merged words {f['merged']}, split words {f['split']}")
    if misread := report.misreads():
        lines += [
            "",
            "lines not read word for word (reference -> read):",
            *(f"  {m}" for m in misread),
        ]
    return "\n".join(lines)


def _sum(pairs) -> tuple[int, int]:
    a = b = 0
    for x, y in pairs:
        a, b = a + x, b + y
    return a, b


def run(reader, progress: Callable[[str], None] = lambda m: None) -> OcrReport:
    """Read every screen with ``reader`` (a ``TextReader``) and score it."""
    from perception.sources.frames import read_image

    progress("rendering or reading the cached screens …")
    folder = screen_folder()
    frames = {s.name: read_image(folder / f"{s.name}.png") for s in screens()}
    reader.read(frames[screens()[0].name][:64, :64])  # load the models before timing
    results = []
    for s in screens():
        t0 = time.perf_counter()
        lines = [ln.text for ln in reader.read(frames[s.name])]
        ms = 1000 * (time.perf_counter() - t0)
        results.append(ScreenResult(s, lines, ms, closest_lines(s.lines, lines)))
        progress(f"{s.name}: {len(lines)} lines read in {ms:.0f} ms")
    progress("searching the read lines for every reference word …")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mnemo-bench-ocr-") as tmp:
        return OcrReport({**_figures(results), **search_figures(results, tmp)}, results)


def search_figures(results: list[ScreenResult], folder) -> dict[str, float]:
    """How many queries a full-text search answers with the line read for them, with the store's
    forgiving index (``graph/spelling.py``: screen words joined, a query's adjacent words joined)
    and with the plain text, in LanceDB tables of the read lines (FTS as the store builds it). The
    queries are each reference word and each two adjacent words of a reference line, as a user
    types them; queries that do not find even their reference line (stop words) are not counted."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from bench.metrics import word_tokens
    from graph.spelling import full_text_terms, search_text

    pairs = [p for r in results for p in r.pairs]
    rows = [
        {"line": i, "ref": ref, "text": read, "search_text": search_text("resource", read)}
        for i, (ref, read) in enumerate(pairs)
    ]
    table = lancedb.connect(str(folder)).create_table(
        "lines", pa.Table.from_pylist(rows), mode="overwrite"
    )
    for column in ("ref", "text", "search_text"):
        table.create_index(column, config=FTS(), replace=True)

    def finds(word: str, column: str, line: int) -> bool:
        terms = full_text_terms(word) if column == "search_text" else " ".join(word_tokens(word))
        hits = table.search(terms, query_type="fts", fts_columns=column).limit(len(rows)).to_list()
        return any(h["line"] == line for h in hits)

    counted = plain = forgiving = 0
    for line, (ref, _) in enumerate(pairs):
        words = word_tokens(ref)
        for query in {*words, *(f"{a} {b}" for a, b in zip(words, words[1:]))}:
            if not finds(query, "ref", line):
                continue
            counted += 1
            plain += finds(query, "text", line)
            forgiving += finds(query, "search_text", line)
    return {
        "search_queries": counted,
        "search_found_plain": round(plain / counted, 4) if counted else 0.0,
        "search_found": round(forgiving / counted, 4) if counted else 0.0,
    }


def _figures(results: list[ScreenResult]) -> dict[str, float]:
    def accuracy(keep) -> float:
        found, words = _sum(
            words_found(a, b) for r in results if keep(r.screen) for a, b in r.pairs
        )
        return round(found / words, 4) if words else 0.0

    pairs = [p for r in results for p in r.pairs]
    merged, split = _sum(space_errors(a, b) for a, b in pairs)
    words = sum(words_found(a, a)[1] for a, _ in pairs)
    edits, chars = _sum((edit_distance(a, b), len(a)) for a, b in pairs)
    return {
        "lines": len(pairs),
        "words": words,
        "word_accuracy_terminal": accuracy(lambda s: s.kind == "terminal"),
        "word_accuracy_terminal_12_16": accuracy(
            lambda s: s.kind == "terminal" and 12 <= s.px <= 16
        ),
        "word_accuracy_ui": accuracy(lambda s: s.kind == "ui"),
        "merged": merged,
        "split": split,
        "merged_split_rate": round((merged + split) / words, 4),
        "ocr_cer": round(edits / chars, 4),
        "ms_per_frame": round(statistics.mean(r.ms for r in results), 1),
    }


def add_arguments(parser) -> None:
    """``mnemo bench ocr``'s own options."""
    parser.add_argument(
        "--cpus",
        metavar="CPU,...",
        help="also read bands of the screens under QEMU's emulation of these x86-64 CPU models, "
        "comma-separated (Haswell: AVX2, no AVX-512; SandyBridge: AVX, no AVX2), and compare the text "
        "with the native reading (needs qemu-user; about 150 times slower than native)",
    )
