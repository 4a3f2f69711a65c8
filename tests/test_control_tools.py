"""The agent's tools on the demo's memory (real models, real media)."""

import pytest

from control.tools import MemoryTools

pytestmark = pytest.mark.slow


def test_people_are_listed_with_their_faces_and_voices(demo_store):
    people = {p.name: p for p in MemoryTools(demo_store).list_people()}
    assert set(people) == {"Diane", "Sheila"}
    for p in people.values():
        assert {m.split("_")[0] for m in p.members} == {"face", "voice"}


def test_a_person_by_name_or_id_and_her_memories(demo_store):
    tools = MemoryTools(demo_store)
    sheila = tools.person("sheila")
    assert tools.person(f"<{sheila.members[0]}>") == sheila == tools.person(sheila.person_id)
    texts = " ".join(m.text for m in tools.about_person("Sheila"))
    assert "Yankee" in texts and "Sheila (<" in texts
    with pytest.raises(
        ValueError, match=r"known: .*\(Sheila\).*\(Diane\)|known: .*\(Diane\).*\(Sheila\)"
    ):
        tools.person("Bob")


def test_time_ranges_and_clips(demo_store):
    tools = MemoryTools(demo_store)
    hit = tools.search("Diane in New Jersey", k=1)[0].memory
    clip = tools.read_clip(hit.clip_id)
    assert "Diane in New Jersey" in clip.transcript and clip.media_location.endswith("#t=0,30")
    window = tools.in_time_range(hit.start_ts - 1, hit.end_ts + 1)
    assert hit.memory_id in {m.memory_id for m in window}
    with pytest.raises(ValueError, match="ends"):
        tools.in_time_range(10.0, 5.0)
    with pytest.raises(ValueError, match="no committed clip"):
        tools.read_clip("nope")
