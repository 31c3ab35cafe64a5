"""Turning a page's bytes into text, with the encodings a browser would accept and no others.

A page names its own charset, and Python knows far more codecs than the web uses; some of them
are pathological on hostile input (``punycode`` decodes in quadratic time: 2 MB of it takes
minutes). So the charset a page declares is looked up among the labels of the WHATWG Encoding
Standard (https://encoding.spec.whatwg.org/#names-and-labels), the same list browsers use, and
mapped to the Python codec that decodes it; any other name falls back to UTF-8, undecodable
bytes becoming U+FFFD. Every codec in the table decodes in linear time.

Decoding a 2 MB page still takes a while, so it happens in the extraction worker, not on the
event loop.
"""

from __future__ import annotations

import codecs
import re

_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)

# WHATWG encoding name -> (Python codec, its labels separated by spaces). ISO-8859-8-I shares
# ISO-8859-8's entry (same bytes, another reading order). Where Python's codec of the same name is
# stricter than the web's (Shift_JIS, EUC-KR, Big5, GBK), the superset browsers decode with is
# used instead. The "replacement" encodings (ISO-2022-KR, HZ, ...) and x-user-defined are left
# out: a page naming them falls back to UTF-8.
_ENCODINGS: dict[str, tuple[str, str]] = {
    "UTF-8": ("utf-8", "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8"),
    "IBM866": ("cp866", "866 cp866 csibm866 ibm866"),
    "ISO-8859-2": (
        "iso8859_2",
        "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    ),
    "ISO-8859-3": (
        "iso8859_3",
        "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    ),
    "ISO-8859-4": (
        "iso8859_4",
        "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    ),
    "ISO-8859-5": (
        "iso8859_5",
        "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 "
        "iso_8859-5:1988",
    ),
    "ISO-8859-6": (
        "iso8859_6",
        "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 "
        "iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 "
        "iso_8859-6:1987",
    ),
    "ISO-8859-7": (
        "iso8859_7",
        "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 "
        "iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    ),
    "ISO-8859-8": (
        "iso8859_8",
        "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 "
        "iso88598 iso_8859-8 iso_8859-8:1988 visual csiso88598i iso-8859-8-i logical",
    ),
    "ISO-8859-10": (
        "iso8859_10",
        "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    ),
    "ISO-8859-13": ("iso8859_13", "iso-8859-13 iso8859-13 iso885913"),
    "ISO-8859-14": ("iso8859_14", "iso-8859-14 iso8859-14 iso885914"),
    "ISO-8859-15": ("iso8859_15", "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9"),
    "ISO-8859-16": ("iso8859_16", "iso-8859-16"),
    "KOI8-R": ("koi8_r", "cskoi8r koi koi8 koi8-r koi8_r"),
    "KOI8-U": ("koi8_u", "koi8-ru koi8-u"),
    "macintosh": ("mac_roman", "csmacintosh mac macintosh x-mac-roman"),
    "windows-874": ("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    "windows-1250": ("cp1250", "cp1250 windows-1250 x-cp1250"),
    "windows-1251": ("cp1251", "cp1251 windows-1251 x-cp1251"),
    "windows-1252": (
        "cp1252",
        "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 "
        "iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 "
        "x-cp1252",
    ),
    "windows-1253": ("cp1253", "cp1253 windows-1253 x-cp1253"),
    "windows-1254": (
        "cp1254",
        "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
        "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254",
    ),
    "windows-1255": ("cp1255", "cp1255 windows-1255 x-cp1255"),
    "windows-1256": ("cp1256", "cp1256 windows-1256 x-cp1256"),
    "windows-1257": ("cp1257", "cp1257 windows-1257 x-cp1257"),
    "windows-1258": ("cp1258", "cp1258 windows-1258 x-cp1258"),
    "x-mac-cyrillic": ("mac_cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
    "GBK": (
        "gb18030",
        "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    ),
    "gb18030": ("gb18030", "gb18030"),
    "Big5": ("big5hkscs", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    "EUC-JP": ("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    "ISO-2022-JP": ("iso2022_jp", "csiso2022jp iso-2022-jp"),
    "Shift_JIS": (
        "cp932",
        "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    ),
    "EUC-KR": (
        "cp949",
        "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 "
        "ksc5601 ksc_5601 windows-949",
    ),
    "UTF-16BE": ("utf-16-be", "unicodefffe utf-16be"),
    "UTF-16LE": (
        "utf-16-le",
        "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
    ),
}

CODEC_BY_LABEL: dict[str, str] = {
    label: codec for codec, labels in _ENCODINGS.values() for label in labels.split()
}


def codec_for(label: str | None) -> str | None:
    """The Python codec for a WHATWG encoding label (case and surrounding blanks ignored), or
    None for anything browsers would not accept either."""
    if not label:
        return None
    return CODEC_BY_LABEL.get(label.strip().lower())


def decode_html(body: bytes, declared: str | None) -> str:
    """Text of a page: a BOM wins, then the HTTP charset, then a ``<meta>`` charset, then UTF-8.
    Only WHATWG labels count; undecodable bytes become U+FFFD instead of failing the article."""
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, errors="replace")
    codec = codec_for(declared)
    if codec is None:
        sniffed = _META_CHARSET.search(body[:4096])
        codec = codec_for(sniffed.group(1).decode("ascii")) if sniffed else None
        # A <meta> claiming UTF-16 is necessarily wrong: it was just read as ASCII.
        if codec in ("utf-16-le", "utf-16-be"):
            codec = "utf-8"
    return body.decode(codec or "utf-8", errors="replace")
