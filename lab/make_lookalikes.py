"""Write conversation/prompt/lookalike_table.py: the characters a name loses and the look-alike
letters speaker labels are compared by (see ``conversation.prompt.names``).

    python -m lab.make_lookalikes [--check]

Nothing is downloaded: the table comes from Python's ``unicodedata`` and a hand list, so the same
Python (same Unicode version) always writes the same file; ``--check`` says whether the committed
file is what this Python would write (tests/conversation/prompt/test_lookalikes.py runs it).

* **Invisible**: every character of category Cf (format: zero-width joiners and spaces, soft
  hyphen, direction marks and overrides, tag characters, ...) from ``unicodedata``, plus the
  Default_Ignorable characters that are not Cf (combining grapheme joiner, the Hangul fillers
  U+115F, U+1160, U+3164, U+FFA0 that Discord shows as a blank name, Khmer inherent vowels,
  variation selectors, the unassigned rest of the tag block) and U+2800 (Braille blank, the
  other blank-name trick).
* **Look-alikes**: the hand list below, written by Unicode name (``unicodedata.lookup`` checks
  every one): Cyrillic and Greek letters that look like a Latin letter (capital and small
  where each looks alike), a few Latin ones (dotless i, script a and g, I/l/1/|, 0/O), and
  from ``unicodedata`` every "LATIN LETTER SMALL CAPITAL X". Full-width forms, mathematical
  letters, circled and modifier letters need no entry: they are compared after NFKC (which
  also turns the lunate sigmas into sigma, so those are not covered). Letters
  with marks (Cyrillic ё, Greek ά) need none either: they are compared decomposed (NFD), so
  their base letter is looked up. Not covered: multi-letter look-alikes (rn / m), Armenian,
  Cherokee, Lisu, Coptic and other scripts, symbols.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "conversation" / "prompt" / "lookalike_table.py"

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) that are not category Cf, and the
# Braille blank: (first, last) code points.
NOT_FORMAT_BUT_INVISIBLE = [
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong / jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xFFF0, 0xFFF8),  # unassigned, default ignorable
    (0xE0000, 0xE0FFF),  # tags (assigned or not), variation selectors supplement, reserved
]

# Letter (by Unicode name) -> the Latin letter it passes for. Small letters only where the small
# letter itself looks like a Latin one (Cyrillic "в" does not look like "b"; "В" does).
SEEDS = {
    # Cyrillic capitals
    "CYRILLIC CAPITAL LETTER A": "a",
    "CYRILLIC CAPITAL LETTER VE": "b",
    "CYRILLIC CAPITAL LETTER IE": "e",
    "CYRILLIC CAPITAL LETTER KA": "k",
    "CYRILLIC CAPITAL LETTER EM": "m",
    "CYRILLIC CAPITAL LETTER EN": "h",
    "CYRILLIC CAPITAL LETTER O": "o",
    "CYRILLIC CAPITAL LETTER ER": "p",
    "CYRILLIC CAPITAL LETTER ES": "c",
    "CYRILLIC CAPITAL LETTER TE": "t",
    "CYRILLIC CAPITAL LETTER U": "y",
    "CYRILLIC CAPITAL LETTER HA": "x",
    "CYRILLIC CAPITAL LETTER DZE": "s",
    "CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I": "l",
    "CYRILLIC CAPITAL LETTER JE": "j",
    "CYRILLIC CAPITAL LETTER SHHA": "h",
    "CYRILLIC CAPITAL LETTER STRAIGHT U": "y",
    "CYRILLIC CAPITAL LETTER IZHITSA": "v",
    "CYRILLIC CAPITAL LETTER QA": "q",
    "CYRILLIC CAPITAL LETTER WE": "w",
    "CYRILLIC CAPITAL LETTER KOMI DE": "d",
    "CYRILLIC LETTER PALOCHKA": "l",
    "CYRILLIC CAPITAL LETTER ZE": "3",
    # Cyrillic small
    "CYRILLIC SMALL LETTER A": "a",
    "CYRILLIC SMALL LETTER IE": "e",
    "CYRILLIC SMALL LETTER O": "o",
    "CYRILLIC SMALL LETTER ER": "p",
    "CYRILLIC SMALL LETTER ES": "c",
    "CYRILLIC SMALL LETTER U": "y",
    "CYRILLIC SMALL LETTER HA": "x",
    "CYRILLIC SMALL LETTER DZE": "s",
    "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I": "i",
    "CYRILLIC SMALL LETTER JE": "j",
    "CYRILLIC SMALL LETTER SHHA": "h",
    "CYRILLIC SMALL LETTER STRAIGHT U": "y",
    "CYRILLIC SMALL LETTER IZHITSA": "v",
    "CYRILLIC SMALL LETTER QA": "q",
    "CYRILLIC SMALL LETTER WE": "w",
    "CYRILLIC SMALL LETTER KOMI DE": "d",
    "CYRILLIC SMALL LETTER PALOCHKA": "l",
    "CYRILLIC SMALL LETTER GHE": "r",
    "CYRILLIC SMALL LETTER PE": "n",
    # Greek capitals
    "GREEK CAPITAL LETTER ALPHA": "a",
    "GREEK CAPITAL LETTER BETA": "b",
    "GREEK CAPITAL LETTER EPSILON": "e",
    "GREEK CAPITAL LETTER ZETA": "z",
    "GREEK CAPITAL LETTER ETA": "h",
    "GREEK CAPITAL LETTER IOTA": "l",
    "GREEK CAPITAL LETTER KAPPA": "k",
    "GREEK CAPITAL LETTER MU": "m",
    "GREEK CAPITAL LETTER NU": "n",
    "GREEK CAPITAL LETTER OMICRON": "o",
    "GREEK CAPITAL LETTER RHO": "p",
    "GREEK CAPITAL LETTER TAU": "t",
    "GREEK CAPITAL LETTER UPSILON": "y",
    "GREEK CAPITAL LETTER CHI": "x",
    "GREEK CAPITAL LETTER YOT": "j",
    # Greek small
    "GREEK SMALL LETTER ALPHA": "a",
    "GREEK SMALL LETTER GAMMA": "y",
    "GREEK SMALL LETTER IOTA": "i",
    "GREEK SMALL LETTER NU": "v",
    "GREEK SMALL LETTER OMICRON": "o",
    "GREEK SMALL LETTER RHO": "p",
    "GREEK SMALL LETTER UPSILON": "u",
    "GREEK SMALL LETTER CHI": "x",
    "GREEK LETTER YOT": "j",
    # Latin
    "LATIN SMALL LETTER DOTLESS I": "i",
    "LATIN SMALL LETTER DOTLESS J": "j",
    "LATIN SMALL LETTER ALPHA": "a",
    "LATIN SMALL LETTER SCRIPT G": "g",
    "LATIN SMALL LETTER IOTA": "i",
    "LATIN LETTER DENTAL CLICK": "l",
    "LATIN CAPITAL LETTER I": "l",
    "DIGIT ONE": "l",
    "VERTICAL LINE": "l",
    "DIGIT ZERO": "o",
}
SMALL_CAPITAL = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z])")


def invisible_ranges() -> list[tuple[int, int]]:
    """Every Cf code point and the hand list, as sorted, merged ranges."""
    points = {cp for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)) == "Cf"}
    for first, last in NOT_FORMAT_BUT_INVISIBLE:
        points.update(range(first, last + 1))
    ranges: list[tuple[int, int]] = []
    for cp in sorted(points):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def lookalikes() -> dict[int, str]:
    """Code point -> Latin letter, from the seeds and the small capitals."""
    table: dict[int, str] = {}
    for name, latin in SEEDS.items():
        table[ord(unicodedata.lookup(name))] = latin
    for cp in range(sys.maxunicode + 1):
        found = SMALL_CAPITAL.fullmatch(unicodedata.name(chr(cp), ""))
        if found:
            table[cp] = found[1].lower()
    for cp, latin in table.items():
        char = chr(cp)
        # Looked up after NFKC and NFD: a letter those change would never be seen.
        assert unicodedata.normalize("NFKD", char) == char, unicodedata.name(char)
        assert latin.isascii() and len(latin) == 1, unicodedata.name(char)
    return dict(sorted(table.items()))


def render() -> str:
    lines = [
        '"""Generated by ``python -m lab.make_lookalikes`` from unicodedata and a hand list',
        '(its docstring says what is covered). Do not edit: change the script, run it again."""',
        "",
        f'UNICODE_VERSION = "{unicodedata.unidata_version}"',
        "",
        "# Removed from names: (first, last) code points.",
        "INVISIBLE_RANGES = (",
    ]
    for first, last in invisible_ranges():
        lines.append(f"    (0x{first:04X}, 0x{last:04X}),")
    lines += [
        ")",
        "",
        "# Compared as the Latin letter they look like (after NFKC and NFD).",
        "LOOKALIKES = {",
    ]
    for cp, latin in lookalikes().items():
        lines.append(f'    0x{cp:04X}: "{latin}",  # {unicodedata.name(chr(cp))}')
    lines += ["}", ""]
    return "\n".join(lines)


def coverage() -> dict[str, int]:
    """How many letters of each script the comparison reads as a Latin letter (with marks)."""
    table = {chr(cp): latin for cp, latin in lookalikes().items()}
    counts: dict[str, int] = {}
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        name = unicodedata.name(char, "")
        script = next(
            (s for s in ("FULLWIDTH", "MATHEMATICAL", "CYRILLIC", "GREEK", "LATIN") if s in name),
            None,
        )
        if script is None or not unicodedata.category(char).startswith("L"):
            continue
        decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", char))
        base = decomposed[:1]
        if base in table or (base.isascii() and base.isalpha() and script != "LATIN"):
            counts[script] = counts.get(script, 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    text = render()
    if args.check:
        if TABLE.read_text(encoding="utf-8") != text:
            sys.exit(f"{TABLE}: not what this Python writes; run python -m lab.make_lookalikes")
        print(f"{TABLE.name}: up to date (Unicode {unicodedata.unidata_version})")
        return
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE} (Unicode {unicodedata.unidata_version})")
    print("letters read as a Latin one:", coverage())


if __name__ == "__main__":
    main()
