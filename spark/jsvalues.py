"""JSON records with the meaning the TypeScript side gives them, for Spark's executors.

SparkStreamSink validates each micro-batch where Spark's data is: these functions run inside
Python UDFs on the executors and must give, record for record, what the TypeScript side gives:

- `parse`: `parseJsonRecord` (src/util/exact-json.ts): JSON.parse's values, integers beyond 2^53
  exact, a duplicate key's last value (but refused when the text has a 16-digit run: the exact
  parser's rule), NaN/Infinity refused, `-0` kept negative;
- `encode`: the engines' one JavaScript pass (src/engine/encode.ts): per field a text and a tag;
- `explain`: a bad row's reasons (src/engine/assemble.ts's messages, whose fixed parts the
  TypeScript side sends as templates), its record's JSON text (`jsonText`) and the identity its
  quarantine id is hashed from (src/lake/quarantine.ts, `canonicalJson`).

Values: JSON null is None, strings str (a lone surrogate stays a lone code point, as in a
JavaScript string), booleans bool, integers int (`NEG_ZERO` for `-0`), other numbers float,
objects dict, arrays list. test/spark/executors.test.ts holds this file to the TypeScript side.
"""
import json
import math
import re
import sys

if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)  # a 5,000-digit integer is JSON; BigInt reads it

TAG_NONE, TAG_STRING, TAG_INTEGRAL, TAG_NUMBER, TAG_BOOLEAN, TAG_NESTED, TAG_JSON, TAG_INVALID = range(8)
TAGS_PER_WORD = 17
MAX_SAFE = 2**53 - 1
NEG_ZERO = -0.0

# Where `-0` may be the integer -0 (over-inclusive: the hook is then only slower).
_NEG_ZERO = re.compile(r"-0(?![0-9.eE])")
# Bytes with each ASCII digit as "0" and all else ".": a 16-digit run is then one substring test,
# several times faster than a regular expression's scan.
_DIGIT_BYTES = bytes(48 if 48 <= i <= 57 else 46 for i in range(256))
_SIXTEEN = b"0" * 16
_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")


class NotJson(ValueError):
    pass


def _constant(name):
    raise NotJson("%s is not JSON" % name)


def _int(text):
    return NEG_ZERO if text == "-0" else int(text)


def _same(a, b):
    """JavaScript's `===` over parsed values, deep for arrays and objects (lossless-json's isDeepEqual)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_same(a.get(k, _MISSING), b.get(k, _MISSING)) for k in {**a, **b})
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or a is _MISSING or b is _MISSING:
        return a is b
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    # Numbers: a bigint (an int beyond 2^53) equals only a bigint.
    big_a, big_b = isinstance(a, int) and abs(a) > MAX_SAFE, isinstance(b, int) and abs(b) > MAX_SAFE
    return big_a == big_b and a == b


def _pairs_refusing_duplicates(pairs):
    """The exact parser's objects: a key given twice with different values is refused."""
    d = {}
    for k, v in pairs:
        if k in d and not _same(d[k], v):
            raise NotJson("Duplicate key %s encountered" % js_quote(k))
        d[k] = v
    return d


def _long_digits(text):
    """The text has a run of 16 digits (the exact parser's rule for when it parses)."""
    return _SIXTEEN in text.encode("utf-8", "surrogatepass").translate(_DIGIT_BYTES)


# Built once: json.loads with arguments builds a decoder per call.
_EXACT = json.JSONDecoder(parse_constant=_constant, parse_int=_int, object_pairs_hook=_pairs_refusing_duplicates)
_SIGNED = json.JSONDecoder(parse_constant=_constant, parse_int=_int)
_PLAIN = json.JSONDecoder(parse_constant=_constant)


def parse(text):
    """A record's JSON text as a value; NotJson when JavaScript's parser refuses it."""
    try:
        if _long_digits(text):
            return _EXACT.decode(text)
        # Python's own integers are exact; only `-0` needs the hook (JavaScript keeps it negative).
        return (_SIGNED if _NEG_ZERO.search(text) else _PLAIN).decode(text)
    except NotJson:
        raise
    except (ValueError, RecursionError) as err:
        raise NotJson(str(err).splitlines()[0] if str(err) else type(err).__name__)


# ── spelling: JavaScript's Number#toString, JSON.stringify, numberText ──


def _digits(x):
    """(digits, point) with x = 0.digits × 10^point, digits without leading or trailing zeros."""
    r = repr(abs(x))
    mant, _, exp = r.partition("e")
    dot = mant.find(".")
    digits = mant if dot < 0 else mant[:dot] + mant[dot + 1 :]
    point = (len(mant) if dot < 0 else dot) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def js_number(x):
    """String(x) for a JavaScript number."""
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    s, n = _digits(x)
    k = len(s)
    sign = "-" if x < 0 else ""
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + s
    e = n - 1
    exp = ("e+" if e >= 0 else "e-") + str(abs(e))
    return sign + (s if k == 1 else s[0] + "." + s[1:]) + exp


def number_text(x):
    """numberText (src/engine/canonical.ts): shortest round-trip digits, never an exponent."""
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    s, n = _digits(x)
    sign = "-" if x < 0 else ""
    if n <= 0:
        return sign + "0." + "0" * (-n) + s
    if n >= len(s):
        return sign + s + "0" * (n - len(s))
    return sign + s[:n] + "." + s[n:]


def _escape_surrogate(m):
    return "\\u%04x" % ord(m.group(0))


def js_quote(s):
    """JSON.stringify of a string (lone surrogates as \\udXXX escapes, as well-formed stringify)."""
    out = json.dumps(s, ensure_ascii=False)
    return _SURROGATE.sub(_escape_surrogate, out) if _SURROGATE.search(out) else out


def _is_index(k):
    return _INDEX.match(k) is not None and int(k) < 2**32 - 1


def js_keys(d):
    """A JavaScript object's own key order: array indices ascending, then insertion order."""
    idx = [k for k in d if _is_index(k)]
    if not idx:
        return list(d)
    return sorted(idx, key=int) + [k for k in d if not _is_index(k)]


def _utf16(k):
    return k.encode("utf-16-be", "surrogatepass")


class _BigInt(Exception):
    """JSON.stringify met a bigint (it throws a TypeError there)."""


def stringify(v, sort_keys=False, bigint=True):
    """JSON text of a value: jsonText (bigint=True) or JSON.stringify (bigint=False: _BigInt)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return js_quote(v)
    if isinstance(v, int):
        if not bigint and abs(v) > MAX_SAFE:
            raise _BigInt()
        return str(v)
    if isinstance(v, float):
        return js_number(v) if math.isfinite(v) else "null"
    if isinstance(v, list):
        return "[" + ",".join(stringify(x, sort_keys, bigint) for x in v) + "]"
    keys = sorted(v, key=_utf16) if sort_keys else js_keys(v)
    return "{" + ",".join(js_quote(k) + ":" + stringify(v[k], sort_keys, bigint) for k in keys) + "}"


def well_formed_json(text):
    """wellFormedJson (src/util/well-formed-json.ts): escaped lone surrogates become \\ufffd."""
    if "\\ud" not in text:
        return text
    return re.sub(r"\\\\|\\u[dD][89a-fA-F][0-9a-fA-F]{2}", lambda m: m.group(0) if m.group(0) == "\\\\" else "\\ufffd", text)


def lake_json(text):
    """The lake's text of a json value whose engine text is `text`, where the two differ: the
    engine's text has each lone surrogate as a \\ufffd escape (well_formed_json), the lake the
    character itself (JSON.stringify writes U+FFFD raw, so such an escape came from one)."""
    if "\\ufffd" not in text:
        return None
    return re.sub(r"\\\\|\\ufffd", lambda m: m.group(0) if m.group(0) == "\\\\" else "\ufffd", text)


def well_formed(s):
    return not _SURROGATE.search(s)


def to_well_formed(s):
    return _SURROGATE.sub("\ufffd", s)


def _utf16_len(s):
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def _utf16_head(s, units):
    return s.encode("utf-16-le", "surrogatepass")[: 2 * units].decode("utf-16-le", "surrogatepass")


class _Missing:
    """A field the record does not have (JavaScript's undefined)."""

    def __reduce__(self):
        # Pickled by name: Spark ships the encoder's closures by value, and a copied sentinel
        # would not be `is` the module's own.
        return "_MISSING"


_MISSING = _Missing()


def show(v):
    """showValue (src/engine/assemble.ts): a value as a message shows it, at most 120 units."""
    if v is _MISSING:
        s = "undefined"
    elif isinstance(v, float) and not math.isfinite(v):
        s = js_number(v)
    elif isinstance(v, (list, dict)):
        try:
            s = stringify(v, bigint=False)
        except _BigInt:
            s = "[object Array]" if isinstance(v, list) else "[object Object]"
    else:
        s = stringify(v)  # a bigint on its own is its digits, as showValue spells it
    return s if _utf16_len(s) <= 120 else _utf16_head(s, 119) + "\u2026"


def kind_of(v):
    """kindOf (src/engine/assemble.ts): what a record that is not an object is."""
    if v is None:
        return "null"
    if isinstance(v, list):
        return "array"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, int) and abs(v) > MAX_SAFE:
        return "bigint"
    return "number"


# ── the encoder ──


def lookup(rec, keys):
    for k in keys:
        if k in rec:
            return rec[k]
    return _MISSING


def _text(v, keep_nested):
    """(tag, text) as encodeText. By exact type: JSON's values are never subclasses (and bool is no int here)."""
    t = type(v)
    if t is str:
        # isascii is one C pass; only other strings are searched for a lone surrogate.
        return (TAG_STRING, v) if v.isascii() or well_formed(v) else (TAG_INVALID, None)
    if t is int:
        return TAG_INTEGRAL, str(v)
    if t is float:
        if v - v != 0:  # NaN or ±Infinity
            return TAG_INVALID, None
        if not v.is_integer():
            # numberText: repr's digits, unless repr has an exponent.
            r = repr(v)
            return TAG_NUMBER, (r if "e" not in r else number_text(v))
        # Below 2^53 an integral double's shortest digits are its exact value; -0 keeps its sign.
        return TAG_INTEGRAL, (str(int(v)) if v != 0 and -MAX_SAFE <= v <= MAX_SAFE else number_text(v))
    if v is None or v is _MISSING:
        return TAG_NONE, None
    if t is bool:
        return TAG_BOOLEAN, "true" if v else "false"
    if not keep_nested:
        return TAG_NESTED, None
    return TAG_NESTED, stringify(v)


_ISO = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3}|[0-9]{6})Z\Z")
_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(y, m, d):
    yy = y - 1 if m <= 2 else y
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _canonical_iso(v):
    """canonicalIsoMicrosNumber (src/util/civil-time.ts) is defined for `v`."""
    m = _ISO.match(v)
    if not m:
        return False
    y, mo, d, h, mi, sec, frac = m.groups()
    y, mo, d = int(y), int(mo), int(d)
    if not 1 <= mo <= 12 or int(h) > 23 or int(mi) > 59 or int(sec) > 59:
        return False
    leap = mo == 2 and ((y % 4 == 0 and y % 100 != 0) or y % 400 == 0)
    if not 1 <= d <= _MONTH_DAYS[mo] + leap:
        return False
    if 1700 <= y <= 2200:
        return True  # within 2^53 microseconds of 1970 (about 285 years) whatever the rest
    micros = (_days_from_civil(y, mo, d) * 86400 + int(h) * 3600 + int(mi) * 60 + int(sec)) * 1000000 + int(frac) * (1000 if len(frac) == 3 else 1)
    return abs(micros) <= MAX_SAFE


def _field_encoder(f):
    """One field's (tag, text) from its value, for the field's mode (encodeField)."""
    mode, keep = f["mode"], f["keepNested"]
    if mode == "json":

        def encode_json(v):
            if v is None or v is _MISSING:
                return TAG_NONE, None
            if type(v) is float and v - v != 0:
                return TAG_INVALID, None
            return TAG_JSON, well_formed_json(stringify(v))

        return encode_json
    if mode == "timestamp":

        def encode_timestamp(v):
            t = type(v)
            if t is int or t is float:
                # A number is no timestamp; the engine rejects the tag (encodeTimestamp).
                return TAG_NUMBER, None
            if t is str and _canonical_iso(v):
                # Canonical text the engine reads without its shape regex (encodeTimestamp).
                return TAG_INTEGRAL, v
            return _text(v, keep)

        return encode_timestamp
    return lambda v: _text(v, keep)


def _unknown(rec, known):
    if rec.keys() <= known:
        return None
    return ", ".join(to_well_formed(k) for k in js_keys(rec) if k not in known)


STATE_OBJECT, STATE_NOT_JSON, STATE_NOT_OBJECT = 0, 1, 2


def encoder(x):
    """The per-record encode for one plan (`x`: the TypeScript side's executor plan)."""
    fields = x["fields"]
    known = frozenset(x["known"])
    words = len(x["tagWords"])
    tracks = x["tracksUnknown"]
    width = len(fields)
    lakes = [k for k, f in enumerate(fields) if f.get("lakeJson")]
    empty = ([None] * width, [0] * words, None, [None] * len(lakes))
    # Per field: its one key (or None with its keys), its encoder, whether a string keeps its
    # text, and where its 3-bit tag goes (word, multiplier).
    plan = [
        (
            f["keys"][0] if len(f["keys"]) == 1 else None,
            f["keys"],
            _field_encoder(f),
            f["stringText"],
            k // TAGS_PER_WORD,
            8 ** (k % TAGS_PER_WORD),
        )
        for k, f in enumerate(fields)
    ]

    def encode(raw):
        """(state, detail, texts…, tag words…, unknown keys, lake json texts…): encoder_schema's order."""
        try:
            rec = parse("null" if raw is None else raw)
        except NotJson as err:
            return (STATE_NOT_JSON, str(err), *empty[0], *empty[1], None, *empty[3])
        if type(rec) is not dict:
            return (STATE_NOT_OBJECT, kind_of(rec), *empty[0], *empty[1], None, *empty[3])
        texts = []
        tags = [0] * words
        get = rec.get
        for key, keys, enc, string_text, word, mult in plan:
            tag, text = enc(get(key, _MISSING) if key is not None else lookup(rec, keys))
            texts.append(None if (tag == TAG_STRING and not string_text) else text)
            tags[word] += tag * mult
        lake = [None if texts[k] is None else lake_json(texts[k]) for k in lakes]
        return (STATE_OBJECT, None, *texts, *tags, _unknown(rec, known) if tracks else None, *lake)

    return encode


def encoder_schema(x):
    """The Spark schema of encode's result, its columns named as the statement reads them."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    fs = [StructField("__ll_state", IntegerType()), StructField("__ll_detail", StringType())]
    fs += [StructField(f["text"], StringType()) for f in x["fields"]]
    fs += [StructField(w, LongType()) for w in x["tagWords"]]
    fs += [StructField(x["unknownCol"], StringType())]
    fs += [StructField(f["lakeJson"], StringType()) for f in x["fields"] if f.get("lakeJson")]
    return StructType(fs)


def explainer(x):
    """A bad row's (record text, quarantine identity, reasons, rule ids)."""
    checks = x["checks"]
    fields = x["fields"]

    def explain(raw, position, state, detail, fail, unknown):
        pos = None if position is None else json.loads(position)
        pos_text = "null" if pos is None else js_quote(stringify(pos, sort_keys=True))
        raw_text = "null" if raw is None else js_quote("t:" + raw)
        if state == STATE_NOT_JSON:
            identity = "[%s,%s,null]" % (pos_text, raw_text)
            return None, identity, ["not JSON: " + detail], ["record:not_json"]
        rec = parse("null" if raw is None else raw)
        record = stringify(rec)
        identity = "[%s,%s,%s]" % (pos_text, raw_text, js_quote(stringify(rec, sort_keys=True)))
        if state == STATE_NOT_OBJECT:
            return record, identity, ["record is not an object (got %s)" % detail], ["record:not_object"]
        reasons, ids = [], []
        for code in (fail or "").split(","):
            if code == "":
                continue
            c = checks[int(code)]
            if c["show"] == "value":
                shown = show(lookup(rec, fields[c["field"]]["keys"]))
            elif c["show"] == "unknown":
                shown = unknown or ""
            else:
                shown = ""
            reasons.append(c["before"] + shown + c["after"])
            ids.append(c["ruleId"])
        return record, identity, reasons, ids

    return explain
