"""COMPOUND_TEXT, the X11 text encoding of window titles from clients in non-UTF-8 property mode
(xterm sets WM_NAME this way): ISO 2022 designations of Latin, Cyrillic, Greek, CJK sets into GL/GR,
plus UTF-8 segments (ESC % G … ESC % @) for characters no set has."""

from __future__ import annotations

# ESC - F: a 96-character set into GR
_GR96 = {
    "A": "latin-1",
    "B": "iso8859-2",
    "C": "iso8859-3",
    "D": "iso8859-4",
    "F": "iso8859-7",
    "G": "iso8859-6",
    "H": "iso8859-8",
    "L": "iso8859-5",
    "M": "iso8859-9",
    "b": "iso8859-15",
}
# ESC $ ( F (into GL) or ESC $ ) F (into GR): a 94x94 set, decoded as its EUC form
_MB94 = {"A": "gb2312", "B": "euc_jp", "C": "euc_kr"}


def decode_compound_text(raw: bytes) -> str:
    out: list[str] = []
    # a codec; multibyte sets are ("mb", codec)
    gl: str | tuple[str, str] = "ascii"
    gr: str | tuple[str, str] = "latin-1"
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b == 0x1B:  # an escape sequence
            seq_end = i + 1
            while seq_end < n and 0x20 <= raw[seq_end] <= 0x2F:  # intermediate bytes
                seq_end += 1
            if seq_end >= n:
                break
            inter, final = raw[i + 1 : seq_end].decode("latin-1"), chr(raw[seq_end])
            i = seq_end + 1
            if inter == "%" and final == "G":  # UTF-8 until ESC % @
                stop = raw.find(b"\x1b%@", i)
                stop = n if stop < 0 else stop
                out.append(raw[i:stop].decode("utf-8", "replace"))
                i = stop + 3
            elif inter == "(":
                gl = "ascii" if final in "BJ" else gl
            elif inter == "-":
                gr = _GR96.get(final, gr)
            elif inter in ("$(", "$") and final in _MB94:
                gl = ("mb", _MB94[final])
            elif inter == "$)" and final in _MB94:
                gr = ("mb", _MB94[final])
            continue
        high = b >= 0x80
        charset = gr if high else gl
        if isinstance(charset, tuple) and b > 0x20 and b not in (0x7F, 0xFF):
            if i + 1 < n:
                pair = bytes([raw[i] | 0x80, raw[i + 1] | 0x80])
                out.append(pair.decode(charset[1], "replace"))
            i += 2
            continue
        if high:
            out.append(
                bytes([b]).decode(charset if isinstance(charset, str) else "latin-1", "replace")
            )
        else:
            out.append(chr(b))
        i += 1
    return "".join(out)
