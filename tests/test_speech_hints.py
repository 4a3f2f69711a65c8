"""Names told to the speech recogniser: contact lists, spellings, the second pass's windows, and the
hint book an ingest keeps (``perception.speech.hints``, ``perception.speech.second_pass``,
``pipeline.hints``)."""

from __future__ import annotations

import numpy as np

from perception.records import SpeechTurn, Word
from perception.speech.hints import (
    MAX_HOTWORD_CHARS,
    SpeechHints,
    read_contacts,
    respell,
    sound_key,
)
from perception.speech.second_pass import SecondPass, choose_windows


def turn(
    text: str, start_s: float = 0.0, probability: float = 0.9, seg: str = "seg0"
) -> SpeechTurn:
    words, t = [], start_s
    for w in text.split():
        words.append(Word(w, t, t + 0.3, probability))
        t += 0.4
    return SpeechTurn(seg, text, start_s, t, "en", tuple(words))


# ---- contact lists -------------------------------------------------------------------------------


def test_a_vcard_gives_each_cards_name_its_first_name_and_nicknames(tmp_path):
    vcf = tmp_path / "contacts.vcf"
    vcf.write_text(
        "BEGIN:VCARD\r\nVERSION:3.0\r\nN:Smith;Joanna;;;\r\nFN:Joanna Smith\r\nNICKNAME:Jo\r\n"
        "END:VCARD\r\nBEGIN:VCARD\r\nVERSION:4.0\r\nN:Doe;Jon;;;\r\nEND:VCARD\r\n"
        # a folded line (RFC 6350) and a grouped property
        "BEGIN:VCARD\r\nitem1.FN:Gi\r\n na Lopez\r\nEND:VCARD\r\n",
        encoding="utf-8",
    )
    names, note = read_contacts(vcf)
    assert note == ""
    assert names == ("Jo", "Joanna Smith", "Joanna", "Jon Doe", "Jon", "Gina Lopez", "Gina")


def test_a_text_list_is_one_name_a_line_with_comments_and_other_scripts(tmp_path):
    txt = tmp_path / "names.txt"
    txt.write_text("# family\nZoë\n  Jon \n\n王芳\nОлег\n12345\n<script>\n", encoding="utf-8")
    names, note = read_contacts(txt)
    assert names == ("Zoë", "Jon", "王芳", "Олег")
    assert "2 line(s) that are no name skipped" in note


def test_an_empty_or_missing_contact_list_gives_no_names_and_says_so(tmp_path):
    empty = tmp_path / "empty.vcf"
    empty.write_text("", encoding="utf-8")
    assert read_contacts(empty) == (
        (),
        f"contact list {empty} holds no names: speech is transcribed without them",
    )
    names, note = read_contacts(tmp_path / "absent.txt")
    assert names == () and "could not be read" in note and "absent.txt" in note


def test_thousands_of_names_are_cut_to_what_whisper_keeps_most_wanted_first(tmp_path):
    many = tmp_path / "many.txt"
    many.write_text(
        "\n".join(f"Name{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}x" for i in range(5000))
    )
    names, _ = read_contacts(many)
    assert len(names) > 600
    hotwords = SpeechHints(("Gina", *names)).hotwords()
    assert hotwords.startswith("Gina ") and len(hotwords) <= MAX_HOTWORD_CHARS
    assert all(w in names or w == "Gina" for w in hotwords.split(" "))  # whole names only


# ---- spellings ---------------------------------------------------------------------------------


def test_names_that_sound_alike_share_a_key_and_others_do_not():
    assert sound_key("John") == sound_key("Jon")
    assert sound_key("Katherine") == sound_key("Catherine")
    assert sound_key("Ann") == sound_key("Anne")
    assert sound_key("Phillip") == sound_key("Filip")
    assert len({sound_key(n) for n in ("Gina", "Jon", "Tim", "Nate", "Joanna")}) == 5


def test_a_taught_spelling_wins_over_the_common_one():
    hints = SpeechHints(("Jon", "Gina"), ("Jon", "Gina"))
    (fixed,) = respell([turn("Thanks John, see you at john's place.")], hints)
    assert fixed.text == "Thanks Jon, see you at john's place."  # a lower-case word is no name
    assert [w.text for w in fixed.words][:2] == ["Thanks", "Jon,"]


def test_no_spelling_is_forced_when_both_are_known_or_none_was_taught():
    both = SpeechHints(("Jon", "John"), ("Jon", "John"))
    assert respell([turn("Thanks John.")], both)[0].text == "Thanks John."
    established = SpeechHints(("Jon",), ())  # heard, not taught: the recogniser's spelling stays
    assert respell([turn("Thanks John.")], established)[0].text == "Thanks John."


# ---- the second pass's windows -------------------------------------------------------------------


def test_windows_go_where_names_doubt_and_loops_are_and_nowhere_else():
    segs = [
        turn("The weather was nice all week.", 0.0),
        turn("Hey Gee, how did the opening go?", 3.0),
        turn("it went great we sold out.", 6.0, probability=0.2),
        turn("I went to the store.", 9.0),
        turn("Okay, so the plan is fine.", 20.0),
        turn("yes yes yes yes yes yes yes yes yes", 30.0),
    ]
    windows = choose_windows(segs, None, min_probability=0.5, duration_s=60.0)
    # the greeting and the doubtful sentence after it in one window (padded), the loop in another
    assert [(round(w.start_s, 2), round(w.end_s, 2), w.reasons) for w in windows] == [
        (2.75, 8.65, ("name", "unsure")),
        (29.75, 33.85, ("repeats",)),
    ]
    # the weather, the store and "Okay, so" (an interjection, not a vocative) are not looked at
    assert choose_windows([segs[0], segs[3], segs[4]], None, 0.5, 60.0) == []


def test_a_word_that_sounds_like_an_expected_name_is_looked_at_again():
    seg = turn("we met john yesterday.", 0.0)
    assert choose_windows([seg], None, 0.5, 10.0) == []
    hinted = choose_windows([seg], SpeechHints(("Jon",), ("Jon",)), 0.5, 10.0)
    assert hinted and hinted[0].reasons == ("name",)


def test_a_missing_or_corrupt_second_model_leaves_the_first_pass_and_a_note(tmp_path):
    from perception.speech.asr_faster_whisper import FasterWhisperASR

    corrupt = tmp_path / "whisper"
    corrupt.mkdir()
    (corrupt / "model.bin").write_bytes(b"not a model")
    (corrupt / "config.json").write_text("{}")
    for model in (str(corrupt), str(tmp_path / "absent-model")):
        second = SecondPass(FasterWhisperASR(model, compute_type="int8", vad_filter=False))
        segs = [turn("Hey Gee, how are you?", 0.5)]
        audio = np.zeros(16000 * 5, dtype=np.float32)
        result = second.redecode(audio, 16000, segs, SpeechHints(("Gina",)))
        assert result.turns == segs and result.audio_s == 0.0
        assert result.note.startswith("second speech pass unavailable")
        # said once: later clips keep the first pass without trying the model again
        again = second.redecode(audio, 16000, segs)
        assert again.turns == segs and again.note == result.note


# ---- the hint book of an ingest ------------------------------------------------------------------


def test_screens_give_given_names_not_the_words_of_a_user_interface():
    from pipeline.hints import screen_names

    found = screen_names(
        ["File Edit View Help", "Meeting with Gina at 3pm", "Reply to Gina and Marcus"]
    )
    assert found["Gina"] == 2 and found["Marcus"] == 1
    assert not {"File", "Edit", "View", "Help", "Meeting", "Reply"} & set(found)


def test_the_hint_book_puts_the_users_names_and_contacts_first_then_what_was_heard(people_store):
    from factories import media_clip
    from graph import edit_people
    from graph.rows import Entity
    from memorize.memorizer import ClipWrite
    from perception.records import ClipObservations
    from pipeline.hints import HintBook

    edit_people.name(people_store, "voice_1", "Jo")  # `mnemo people name voice_1 Jo`
    book = HintBook(people_store, contacts=("Jon", "Gina", "jo"))
    clip = media_clip()
    assert book.for_clip(clip) == SpeechHints(("Jo", "Jon", "Gina"), ("Jo", "Jon", "Gina"))
    # a clip memorized names a person from what was said: later clips expect that name too
    book.learn(
        ClipObservations(clip, (), ()),
        ClipWrite([], [Entity("character_9", "character", 0, 0, name="Audrey")], [], [], []),
    )
    hints = book.for_clip(clip)
    assert hints.names == ("Jo", "Jon", "Gina", "Audrey")
    assert hints.spellings == ("Jo", "Jon", "Gina")  # a name only heard is no taught spelling


def test_a_reading_of_the_hint_list_is_told_from_speech_with_names():
    from perception.speech.hints import mostly_hints

    many = SpeechHints(tuple(f"Name{i}" for i in range(50)) + ("Gina", "Jon", "Joanna", "Smith"))
    assert mostly_hints([turn("Name4 Name4 Name")], many)
    assert mostly_hints([turn("Name1 Name4 Name")], many)  # measured: 3000 names, tiny.en
    assert mostly_hints([turn("Name1 Name2 Name3 and")], many)
    assert mostly_hints([turn("Gina Jon Name7 Name9 hello")], many)
    assert not mostly_hints([turn("Thanks Jon!")], many)
    assert not mostly_hints([turn("Hey Gina, this is Joanna Smith from the store.")], many)
    # words the first reading heard too are speech, not the list
    assert not mostly_hints([turn("Gina Gina Gina")], many, heard={"gina"})
    assert not mostly_hints([turn("Name4 Name4")], None)
