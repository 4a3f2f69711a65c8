"""Whether a word heard as a name is someone's given name somewhere.

The lexicon is the first names of Faker's person providers in its English-speaking locales (name
registries and censuses of the US, UK, Ireland, India, New Zealand, …: 8,600 names). A word outside it
is not refused as a name (people are called many things these lists lack: "Wei", "Oluwaseun"), but it
needs more evidence before it names a person (``memorize.naming``): a misheard common word or place ("Wow Joanna"
heard as "Wild Atlanta", "Melanie" as "Swamp") is then no name on a few hearings.

A name's short form ("Mel", "Bea": three letters or more that begin a listed name) counts as listed.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import logging
import pkgutil

log = logging.getLogger(__name__)

_FIELDS = ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary")
MIN_SHORT_FORM = 3
# the English-speaking locales (en, en_US, en_GB, en_IE, en_IN, en_NZ, en_PH, …): names as an English
# recogniser spells them. Every locale's (31k names) holds words a recogniser makes of other words:
# Icelandic "Atlanta" was the wrong name "Wow Joanna" became
LOCALES = ("en",)


@functools.cache
def lexicon() -> tuple[str, ...]:
    """Every listed first name, case-folded, sorted (loaded once, on first use)."""
    import faker.providers.person as person

    names: set[str] = set()
    for module in pkgutil.iter_modules(person.__path__):
        if not module.name.startswith(LOCALES):
            continue
        try:
            provider = importlib.import_module(f"{person.__name__}.{module.name}").Provider
        except (
            ImportError,
            AttributeError,
        ) as e:  # a locale this Faker cannot load: the others still count
            log.debug("first names of locale %s not loaded: %s", module.name, e)
            continue
        for field in _FIELDS:
            listed = getattr(provider, field, ())
            if not isinstance(
                listed, (tuple, list, dict, set, frozenset)
            ):  # a locale's computed property
                continue
            for name in listed:  # a tuple of names, or a dict of names to weights
                if isinstance(name, str) and name.strip():
                    names.add(name.strip().casefold())
    return tuple(sorted(names))


def is_short_form(short: str, name: str) -> bool:
    """``short`` is a short form of ``name`` ("Mel" of "Melanie"): three letters or more that begin it."""
    return (
        len(short) >= MIN_SHORT_FORM
        and short != name
        and name.casefold().startswith(short.casefold())
    )


def is_given_name(word: str) -> bool:
    """``word`` is a listed first name, or the short form of one ("Mel" of "Melanie")."""
    w = word.strip().casefold()
    names = lexicon()
    i = bisect.bisect_left(names, w)
    return i < len(names) and (names[i] == w or is_short_form(w, names[i]))
