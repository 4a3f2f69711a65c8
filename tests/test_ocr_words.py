"""Word boundaries of screen text from a line's pixels (perception/ocr/words.py), and the bench's
word metrics, on hand-made cases."""

from __future__ import annotations

import numpy as np

from bench.metrics import space_errors, words_found
from perception.ocr.words import Char, LinePixels, blank_runs, fix_confusions, spaced


def chars(text: str, pitch: float = 10.0, start: float = 5.0) -> list[Char]:
    """One Char per character of ``text`` on a monospace grid (a space is a cell too)."""
    return [Char(c, start + i * pitch, 0.99) for i, c in enumerate(text)]


def pixels(runs: list[tuple[int, int]], width: int = 200) -> LinePixels:
    """The line's pixels as ``blank_runs`` gives them: these runs blank, every other column inked."""
    inked = np.ones(width, bool)
    for a, b in runs:
        inked[a:b] = False
    return LinePixels(sorted(runs), inked)


def test_a_wide_blank_run_is_a_space_the_model_missed():
    read = [c for c in chars("ships on") if c.text != " "]  # the model read "shipson"
    runs = [(51, 59), (22, 24)]  # the blank cell between "s" and "o", and a letter gap
    assert spaced(read, pixels(runs)) == "ships on"


def test_a_model_space_over_no_blank_run_is_dropped():
    read = chars("BLUE HERON")
    # "BLUE HER ON": the model's second space lies where the pixels are inked; only 1 px letter gaps
    read = read[:8] + [Char(" ", read[7].x + 5, 0.6)] + read[8:]
    runs = [(38, 52)] + [(int(c.x) + 4, int(c.x) + 5) for c in read[5:]]
    assert spaced(read, pixels(runs)) == "BLUE HERON"


def test_monospace_gaps_beside_narrow_glyphs_are_not_spaces():
    read = chars("10.0.4.21")
    # beside "." a monospace cell leaves 4-5 px of blank on each side: under a whole cell
    runs = [(int(c.x) - 9, int(c.x) - 5) for c in read if c.text == "."] + [
        (int(c.x) + 5, int(c.x) + 9) for c in read if c.text == "."
    ]
    assert spaced(read, pixels(runs)) == "10.0.4.21"


def test_an_underscore_read_over_blank_pixels_is_a_space():
    read = chars("is_level")
    runs = [(20, 32)]  # the underscore's cell (x=25) is blank
    assert spaced(read, pixels(runs)) == "is level"
    assert spaced(read, pixels([(20, 21)])) == "is_level"  # inked there: a real underscore


def test_proportional_text_spaces_from_the_two_groups_of_gaps():
    # letter gaps of 1-3 px, word spaces of 6-7 px, pitch 10: no run in between, so 6 px is a space
    words = ["Please", "lock", "the", "shed"]
    read, runs, x = [], [], 5.0
    for w in words:
        for i, c in enumerate(w):
            read.append(Char(c, x, 0.99))
            if i < len(w) - 1:
                runs.append((int(x) + 4, int(x) + 4 + (1 + i % 3)))
            x += 10
        runs.append((int(x) - 6, int(x)))  # the word space ends where the next word's glyph begins
        x += 2
    runs.pop()
    assert spaced(read, pixels(runs)) == "Please lock the shed"
    assert spaced(read, None) == "Pleaselocktheshed"  # no pixels to trust: the model's reading


def test_blank_runs_on_a_drawn_line_and_none_on_a_photo():
    crop = np.full((20, 60, 3), 255, np.uint8)
    for x0, x1 in (
        (5, 12),
        (14, 21),
        (32, 39),
    ):  # two glyphs 2 px apart, a 11 px space, a third glyph
        crop[5:15, x0:x1] = 0
    assert blank_runs(crop).runs == [(12, 14), (21, 32)]
    noise = np.random.default_rng(0).integers(0, 256, (20, 60, 3), dtype=np.uint8)
    assert blank_runs(noise) is None
    assert blank_runs(np.full((20, 60, 3), 128, np.uint8)) is None  # no ink


def test_an_underline_does_not_join_the_words_it_runs_under():
    # "CV GUI" drawn as a link: glyphs on rows 4-13, a 2-row rule under the whole line on rows 15-16
    crop = np.full((20, 60, 3), 255, np.uint8)
    for x0, x1 in ((5, 12), (14, 21), (32, 39), (41, 48), (50, 53)):
        crop[4:14, x0:x1] = 0
    crop[15:17, 4:54] = 0
    pixels = blank_runs(crop)
    assert (21, 32) in pixels.runs  # the space between the words is blank above the rule
    assert pixels.underline[21:32].all()  # but an underscore read there lies on the rule: kept
    read = [Char(c, x, 0.9) for c, x in zip("CV_GUI", (8, 17, 26, 35, 44, 51))]
    assert spaced(read, pixels) == "CV_GUI"  # no space is added beside the underscore
    crop[15:17] = 255  # the same words without the rule: the same blank run
    assert (21, 32) in blank_runs(crop).runs


def test_glyph_confusions_fixed_only_where_the_word_decides():
    assert (
        fix_confusions("0rder 1ogin 1oss ERRoR ERR0R INFo INF0 c0mpile at 9l or 9l0 percent")
        == "Order login loss ERROR ERROR INFO INFO compile at 91 or 910 percent"
    )
    # each part of a path or identifier on its own
    assert (
        fix_confusions("Install: 1ibmixed_sample.so => 1ibs/armeabi-v7a/")
        == "Install: libmixed_sample.so => libs/armeabi-v7a/"
    )
    for kept in (
        "4f2a9c1",
        "1st",
        "B17",
        "BA 283",
        "README.md",
        "10.0.4.21",
        "x86_64",
        "build-07.example.org",
        "v7a",
        "x0",
        "3/20",
        # digits that are digits: interfaces, hashes, versions, hex, a word after a digit, short mixes
        "eth0",
        "wlan0",
        "sha1",
        "tty1",
        "1.0.1-rc1",
        "v1beta",
        "0xff",
        "0xdeadbeef",
        "deadbeef0",
        "a1fe",
        "1Password",
        "gpt-4o",
        "o1",
        "O2",
        "4o",
        "O365",
    ):
        assert fix_confusions(kept) == kept


def test_the_bench_counts_merged_and_split_words():
    assert space_errors("It ships on Friday", "It shipson Friday") == (1, 0)
    assert space_errors("codename: BLUEHERON", "codename: BLUE HER ON") == (0, 2)
    assert space_errors("level 3 bay 42", "level 3 bay 42") == (0, 0)
    assert space_errors("level 3 bay 42", "levl 3 bay 42") == (0, 0)  # a misread letter is CER's
    assert words_found("the spot is level 3 bay 42", "the spot is level3 bay 42.") == (5, 7)


def test_the_bench_searches_the_read_lines_with_and_without_the_forgiving_index(tmp_path):
    from bench.ocr import ScreenResult, search_figures
    from bench.ocr_screens import screens

    pairs = [
        ("Quarterly launch codename: BLUEHERON", "Quarterly launch codename: BLUE HER ON"),
        ("It ships on Friday", "It shipson Friday"),
        ("level 3 bay 42", "level 3 bay_42"),
    ]
    f = search_figures([ScreenResult(screens()[0], [], 0.0, pairs)], tmp_path)
    # ten searchable words ("It" and "on" are stop words) and nine pairs. On the plain text
    # "BLUEHERON", "ships", "It ships" and "ships on" miss; the
    # forgiving index finds them through the joins and wordninja's split of "shipson". "bay" and
    # "42" are found either way (the tokenizer splits at "_"), and so are pairs holding a found word
    assert f == {"search_queries": 19, "search_found_plain": round(15 / 19, 4), "search_found": 1.0}


def test_dim_text_beside_bright_text_is_not_a_blank_run():
    """A dimmed word (a comment, a shell's suggestion) between bright ones is not a gap: the pixels
    give no spacing and the model's own spaces stand."""
    crop = np.zeros((20, 80, 3), np.uint8)
    for x0, x1, level in ((5, 12, 230), (14, 21, 230), (30, 37, 100), (39, 46, 100), (55, 62, 230)):
        crop[5:15, x0:x1] = level  # "ab" bright, "cd" dim, "e" bright
    assert blank_runs(crop) is None
    crop[crop == 100] = 230  # the same words all bright: the spacing is read
    assert blank_runs(crop).runs == [(12, 14), (21, 30), (37, 39), (46, 55)]
