"""Go's strings.EqualFold: equality under Unicode *simple* case folding.

Python's str.casefold applies *full* folding ("ß" -> "ss", "ﬀ" -> "ff"), which Go does not:
in Go "ß" and "ss" differ while "K", "k" and "K" (U+212A KELVIN SIGN) are one letter. Go walks
a rune's fold orbit (unicode.SimpleFold): the set of runes with the same simple case fold,
i.e. CaseFolding.txt's C and S entries. Here the orbits are built from the Unicode data
Python ships: a rune's simple fold is its full fold when that is a single rune, else its
simple (S) entry, which is its lowercase when that is a single rune; otherwise itself
(U+0130 "İ" and U+0131 "ı" fold only to themselves, as in Go).
"""

from __future__ import annotations

from functools import cache

# CaseFolding S entries whose target is not the rune's lowercase (added in Unicode 15,
# which Go uses since 1.21; Python 3.11 ships Unicode 14).
_EXTRA_SIMPLE = {"\u1fd3": "\u0390", "\u1fe3": "\u03b0", "\ufb05": "\ufb06"}
# No cased letter lies above this (Adlam ends at U+1E95F).
_LAST_CASED = 0x1F000


def simple_fold_key(char: str) -> str:
    """The rune every member of char's fold orbit folds to."""
    if char in _EXTRA_SIMPLE:
        return _EXTRA_SIMPLE[char]
    folded = char.casefold()
    if len(folded) == 1:
        return folded
    lowered = char.lower()
    if len(lowered) == 1:
        return lowered
    return char


@cache
def _orbits() -> dict[str, frozenset[str]]:
    members: dict[str, set[str]] = {}
    for code in range(_LAST_CASED):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        key = simple_fold_key(char)
        if key != char:
            members.setdefault(key, {key}).add(char)
    return {char: frozenset(orbit) for orbit in members.values() for char in orbit}


def fold_orbit(char: str) -> frozenset[str]:
    """The runes Go's unicode.SimpleFold cycles through from char (char alone if none)."""
    return _orbits().get(char, frozenset({char}))


def equal_fold(left: str, right: str) -> bool:
    """Go's strings.EqualFold(left, right)."""
    if len(left) != len(right):
        # Simple folding maps one rune to one rune, so lengths in runes must agree.
        return False
    for a, b in zip(left, right, strict=True):
        if a == b:
            continue
        if a < "\x80" and b < "\x80":
            if a.lower() == b.lower() and a.isalpha():
                continue
            return False
        if b not in fold_orbit(a):
            return False
    return True


__all__ = ["equal_fold", "fold_orbit", "simple_fold_key"]
