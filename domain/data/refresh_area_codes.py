#!/usr/bin/env python3
"""Compare nanp_area_codes.txt with libphonenumber's NANP data (the `phonenumbers` package).

Run it through `cargo xtask area-codes [--check|--write]`, which installs the pinned
`phonenumbers` into .stack/area-codes/venv first. Standard library and phonenumbers only.

What libphonenumber says about an area code (NPA):
  * region: the geocoder's description of the 4-digit prefix `1NPA` ('Florida',
    'Chicago, IL', 'Nova Scotia/Prince Edward Island'); a trailing ', XX' is a state,
    province or territory code, a full name goes through the tables below (US_STATES,
    CA_PROVINCES, US_TERRITORIES, COUNTRIES). Without a 4-digit
    prefix, the majority over the NPA's longer prefixes (`1NPANXX...`). The country is
    `region_code_for_number` of a number in the NPA; US territories (PR, VI, GU, MP, AS)
    are written US-XX as in our table, other NANP countries by their ISO code alone.
  * zones: the union of the time zones of every prefix of the NPA in
    `phonenumbers.timezone.TIMEZONE_DATA` (the country-wide entry `1` is left out).
  * geographic or not: it has geocoder or time-zone prefixes, or a number in it is a
    fixed-line or mobile number; toll-free, personal, premium, ... are not.

Findings, one JSON object a line on stdout:
  missing_from_ours           libphonenumber has a geographic code the table lacks (and that
                              NON_GEOGRAPHIC in area_codes.rs does not list)
  region_differs              the table's region is not libphonenumber's
  zone_not_covered            libphonenumber gives a zone that keeps a clock no zone of our row
                              keeps. Zones that differ only in name or history (America/Denver
                              beside our America/Boise, America/Indiana/Indianapolis beside
                              America/New_York) agree: we compare UTC offsets hour by hour over
                              this year and the next. Zones on our side only are fine: a code
                              spanning a zone line lists every zone, overlays carry the zones
                              of what they overlay (see the table's header).
  unknown_to_libphonenumber   a row of ours libphonenumber knows nothing about
  non_geographic_not_listed   libphonenumber has a non-geographic code (toll-free, personal,
                              ...) that neither the table nor NON_GEOGRAPHIC lists
  geographic_in_libphonenumber  a code NON_GEOGRAPHIC lists that libphonenumber places
then a summary line (`differences` counts the findings not in REVIEWED; `failing` those
--check fails on). Findings in REVIEWED, looked at and kept as the table has them, are
printed with their reason and counted as `reviewed`. Progress goes to stderr.

--check exits 3 when there is a region_differs or missing_from_ours finding (1 and 2 are
Python's own failures and usage errors).
--write appends the missing_from_ours codes to the table (region and zones as derived,
under a comment naming the source, its version and the date); existing rows are never
rewritten.
"""

import argparse
import collections
import datetime
import json
import re
import sys
from pathlib import Path

import phonenumbers
from phonenumbers.geocoder import GEOCODE_DATA
from phonenumbers.timezone import TIMEZONE_DATA

HERE = Path(__file__).resolve().parent
DEFAULT_TABLE = HERE / "nanp_area_codes.txt"
DEFAULT_RUST = HERE.parent / "src" / "area_codes.rs"

# Kinds that make --check fail, and its exit status then.
FAILING = ("region_differs", "missing_from_ours")
CHECK_FAILED = 3

# Findings we looked at and where our table stays as it is, keyed by (kind, NPA, what
# libphonenumber says): printed with their reason under "reviewed", not counted as
# differences. A changed answer from libphonenumber is a new finding again.
REVIEWED = {
    ("zone_not_covered", "474", "America/Winnipeg"):
        "474 overlays 306/639, which libphonenumber itself puts in America/Regina: "
        "Saskatchewan keeps Central Standard Time all year",
    ("zone_not_covered", "689", "America/Chicago"):
        "689 overlays 407/321 (Orlando), which libphonenumber itself puts in "
        "America/New_York",
    ("zone_not_covered", "867", "America/Vancouver"):
        "these are Whitehorse exchanges: Yukon left Pacific time for UTC-7 all year in 2020 "
        "(America/Whitehorse: the clock of libphonenumber's own 1867 entry, America/Fort_Nelson)",
    ("zone_not_covered", "879", "America/Puerto_Rico"):
        "879 overlays 709, which libphonenumber itself puts in America/St_Johns and "
        "America/Halifax; no part of Newfoundland and Labrador keeps Atlantic time "
        "without DST",
    ("zone_not_covered", "907", "Pacific/Honolulu"):
        "the prefix is 907-581, Unalaska (Dutch Harbor), east of 169 deg 30' W and so on "
        "Alaska time; no part of Alaska keeps Hawaii time without DST",
}

US_STATES = {
    "Alabama": "AL", "Alaska": "AK", "Arizona": "AZ", "Arkansas": "AR", "California": "CA",
    "Colorado": "CO", "Connecticut": "CT", "Delaware": "DE", "Florida": "FL", "Georgia": "GA",
    "Hawaii": "HI", "Idaho": "ID", "Illinois": "IL", "Indiana": "IN", "Iowa": "IA",
    "Kansas": "KS", "Kentucky": "KY", "Louisiana": "LA", "Maine": "ME", "Maryland": "MD",
    "Massachusetts": "MA", "Michigan": "MI", "Minnesota": "MN", "Mississippi": "MS",
    "Missouri": "MO", "Montana": "MT", "Nebraska": "NE", "Nevada": "NV", "New Hampshire": "NH",
    "New Jersey": "NJ", "New Mexico": "NM", "New York": "NY", "North Carolina": "NC",
    "North Dakota": "ND", "Ohio": "OH", "Oklahoma": "OK", "Oregon": "OR", "Pennsylvania": "PA",
    "Rhode Island": "RI", "South Carolina": "SC", "South Dakota": "SD", "Tennessee": "TN",
    "Texas": "TX", "Utah": "UT", "Vermont": "VT", "Virginia": "VA", "Washington": "WA",
    "Washington State": "WA", "West Virginia": "WV", "Wisconsin": "WI", "Wyoming": "WY",
    "Washington D.C.": "DC", "Washington, D.C.": "DC", "District of Columbia": "DC",
}
CA_PROVINCES = {
    "Alberta": "AB", "British Columbia": "BC", "British Colombia": "BC", "Manitoba": "MB",
    "New Brunswick": "NB", "Newfoundland and Labrador": "NL", "Newfoundland": "NL",
    "Nova Scotia": "NS", "Ontario": "ON", "Prince Edward Island": "PE", "Quebec": "QC",
    "Québec": "QC", "Saskatchewan": "SK", "Yukon": "YT", "Northwest Territories": "NT",
    "Nunavut": "NU",
}
# US territories: libphonenumber gives them regions of their own; our table writes US-XX.
US_TERRITORIES = {
    "Puerto Rico": "PR", "U.S. Virgin Islands": "VI", "US Virgin Islands": "VI",
    "United States Virgin Islands": "VI", "Guam": "GU", "Northern Mariana Islands": "MP",
    "American Samoa": "AS",
}
# The other NANP countries, by the names the geocoder may use.
COUNTRIES = {
    "Anguilla": "AI", "Antigua and Barbuda": "AG", "Antigua": "AG", "Bahamas": "BS",
    "Barbados": "BB", "Bermuda": "BM", "British Virgin Islands": "VG", "Cayman Islands": "KY",
    "Dominica": "DM", "Dominican Republic": "DO", "Grenada": "GD", "Jamaica": "JM",
    "Montserrat": "MS", "Saint Kitts and Nevis": "KN", "St. Kitts and Nevis": "KN",
    "Saint Lucia": "LC", "St. Lucia": "LC", "Saint Vincent and the Grenadines": "VC",
    "St. Vincent and the Grenadines": "VC", "Sint Maarten": "SX",
    "Trinidad and Tobago": "TT", "Turks and Caicos Islands": "TC",
}
US_CODES = set(US_STATES.values())
CA_CODES = set(CA_PROVINCES.values())
TERRITORY_CODES = set(US_TERRITORIES.values())

GEOGRAPHIC_TYPES = {
    phonenumbers.PhoneNumberType.FIXED_LINE,
    phonenumbers.PhoneNumberType.MOBILE,
    phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE,
}
NON_GEOGRAPHIC_TYPES = {
    phonenumbers.PhoneNumberType.TOLL_FREE,
    phonenumbers.PhoneNumberType.PREMIUM_RATE,
    phonenumbers.PhoneNumberType.SHARED_COST,
    phonenumbers.PhoneNumberType.VOIP,
    phonenumbers.PhoneNumberType.PERSONAL_NUMBER,
    phonenumbers.PhoneNumberType.PAGER,
    phonenumbers.PhoneNumberType.UAN,
    phonenumbers.PhoneNumberType.VOICEMAIL,
}
# Exchanges tried for a number in an NPA (the first a region answers for gives the country).
PROBE_EXCHANGES = ("200", "234", "345", "456", "567", "678", "789", "890", "900")


def progress(message):
    print(f"area-codes: {message}", file=sys.stderr, flush=True)


def emit(obj):
    print(json.dumps(obj, ensure_ascii=False), flush=True)


# --- our side ---------------------------------------------------------------------------


def read_table(path):
    """{npa: (region, [zones])}, parsed as area_codes.rs parses it."""
    rows = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) < 3 or not re.fullmatch(r"[2-9]\d\d", fields[0]):
            raise SystemExit(f"{path}:{number}: not `NPA REGION ZONE [ZONE ...]`: {raw!r}")
        if fields[0] in rows:
            raise SystemExit(f"{path}:{number}: area code {fields[0]} listed twice")
        rows[fields[0]] = (fields[1], fields[2:])
    return rows


def read_non_geographic(path):
    text = path.read_text(encoding="utf-8")
    found = re.search(r"NON_GEOGRAPHIC:\s*&\[u16\]\s*=\s*&\[(.*?)\]", text, re.S)
    if not found:
        raise SystemExit(f"{path}: no `NON_GEOGRAPHIC: &[u16] = &[...]` in it")
    return {f"{int(n):03}" for n in re.findall(r"\d+", found.group(1))}


def subdivisions(region):
    """('US', {'FL'}) for US-FL, ('CA', {'NS', 'PE'}) for CA-NS/PE, ('JM', set()) for JM."""
    country, _, subs = region.partition("-")
    return country, set(subs.split("/")) if subs else set()


# --- libphonenumber's side --------------------------------------------------------------


def region_of_description(description):
    """Our form of the place a geocoder description names ('US-IL', 'CA-NS/PE', 'JM',
    'US-PR'), or None when it names no state, province, territory or country."""
    suffix = re.search(r",\s*([A-Z]{2})$", description)
    if suffix:
        code = suffix.group(1)
        if code in US_CODES or code in TERRITORY_CODES:
            return f"US-{code}"
        if code in CA_CODES:
            return f"CA-{code}"
        return None
    name = description.strip()
    if name in US_STATES:
        return f"US-{US_STATES[name]}"
    if name in US_TERRITORIES:
        return f"US-{US_TERRITORIES[name]}"
    if name in COUNTRIES:
        return COUNTRIES[name]
    parts = [p.strip() for p in name.split("/")]
    if all(p in CA_PROVINCES for p in parts):
        return "CA-" + "/".join(CA_PROVINCES[p] for p in parts)
    if all(p in US_STATES for p in parts):
        return "US-" + "/".join(US_STATES[p] for p in parts)
    return None


def build_index(data):
    """{npa: {prefix: value}} for the NANP prefixes of 4 digits or more."""
    index = collections.defaultdict(dict)
    for key, value in data.items():
        if key.startswith("1") and len(key) >= 4:
            index[key[1:4]][key] = value
    return index


def probe(npa):
    """(country, number types seen) for numbers in the NPA."""
    country = None
    types = set()
    for exchange in PROBE_EXCHANGES:
        number = phonenumbers.parse(f"+1{npa}{exchange}1234")
        region = phonenumbers.region_code_for_number(number)
        if region is None:
            continue
        country = country or region
        types.add(phonenumbers.number_type(number))
    return country, types


def lib_region(npa, geocodes, country):
    """The region libphonenumber gives the NPA, and how it was found."""
    four = geocodes.get("1" + npa)
    if four is not None:
        description = four.get("en", "")
        region = region_of_description(description)
        if region is not None:
            return combine(region, country), f"geocoder 1{npa}: {description!r}"
    votes = collections.Counter()
    for key, value in geocodes.items():
        if len(key) > 4:
            region = region_of_description(value.get("en", ""))
            if region is not None:
                votes[region] += 1
    if votes:
        region, count = votes.most_common(1)[0]
        how = f"majority of geocoder prefixes of {npa} ({count} of {sum(votes.values())})"
        return combine(region, country), how
    if country in ("US", "CA"):
        return country, "country only (no geocoder description names a state or province)"
    if country in TERRITORY_CODES:
        return f"US-{country}", "region_code_for_number"
    if country:
        return country, "region_code_for_number"
    return None, "nothing"


def combine(region, country):
    """A description's region, checked against the number's country: a territory's own
    region code (PR) becomes US-PR; a subdivision of the wrong country stays as described."""
    if country in TERRITORY_CODES and region in (country, f"US-{country}"):
        return f"US-{country}"
    return region


def lib_zones(zones_by_prefix):
    """The NPA's zones, most prefixes first (the 4-digit entry breaks ties)."""
    counts = collections.Counter()
    order = {}
    for key in sorted(zones_by_prefix, key=len):
        for zone in zones_by_prefix[key]:
            if zone == "Etc/Unknown":
                continue
            counts[zone] += 1
            order.setdefault(zone, len(order))
    return sorted(counts, key=lambda z: (-counts[z], order[z]))


# --- clocks -----------------------------------------------------------------------------


class Clocks:
    """Whether two zones keep the same clock: equal UTC offsets at every hour of this
    year and the next. Falls back to comparing names when the system has no tz data."""

    def __init__(self):
        try:
            import zoneinfo

            zoneinfo.ZoneInfo("America/New_York")
            self.zoneinfo = zoneinfo
        except Exception as e:  # no tz database: names only
            progress(f"no IANA tz data for Python ({e}); comparing zone names only")
            self.zoneinfo = None
        year = datetime.date.today().year
        start = datetime.datetime(year, 1, 1, tzinfo=datetime.timezone.utc)
        hours = (datetime.datetime(year + 2, 1, 1, tzinfo=datetime.timezone.utc) - start)
        self.instants = [start + datetime.timedelta(hours=h)
                         for h in range(int(hours.total_seconds() // 3600))]
        self.cache = {}

    def signature(self, zone):
        if zone not in self.cache:
            if self.zoneinfo is None:
                self.cache[zone] = zone
            else:
                try:
                    tz = self.zoneinfo.ZoneInfo(zone)
                    self.cache[zone] = tuple(t.astimezone(tz).utcoffset() for t in self.instants)
                except Exception:
                    self.cache[zone] = zone
        return self.cache[zone]

    def same(self, a, b):
        return a == b or self.signature(a) == self.signature(b)


# --- the comparison ---------------------------------------------------------------------


def compare(ours, non_geographic):
    geocode_index = build_index(GEOCODE_DATA)
    zone_index = build_index(TIMEZONE_DATA)
    clocks = Clocks()
    findings = []
    derived = {}  # npa -> (region, zones) for missing codes, for --write
    candidates = [f"{n}" for n in range(200, 1000) if n % 100 != 11]
    checked = 0
    for npa in candidates:
        geocodes = geocode_index.get(npa, {})
        zones_by_prefix = zone_index.get(npa, {})
        country, types = probe(npa)
        geographic = bool(geocodes or zones_by_prefix or types & GEOGRAPHIC_TYPES)
        non_geo = not geographic and bool(types & NON_GEOGRAPHIC_TYPES)
        row = ours.get(npa)
        if row is None and npa not in non_geographic and not geographic and not non_geo:
            continue  # nobody knows it
        checked += 1
        if row is None:
            if npa in non_geographic:
                if geographic:
                    region, how = lib_region(npa, geocodes, country)
                    findings.append({
                        "kind": "geographic_in_libphonenumber", "npa": npa,
                        "ours": "NON_GEOGRAPHIC", "libphonenumber": region, "how": how,
                    })
                continue
            if non_geo:
                findings.append({
                    "kind": "non_geographic_not_listed", "npa": npa, "ours": None,
                    "libphonenumber": {"country": country,
                                       "types": sorted(type_name(t) for t in types)},
                })
                continue
            region, how = lib_region(npa, geocodes, country)
            zones = lib_zones(zones_by_prefix)
            findings.append({
                "kind": "missing_from_ours", "npa": npa, "ours": None,
                "libphonenumber": {"region": region, "zones": zones}, "how": how,
            })
            if region and zones:
                derived[npa] = (region, zones)
            else:
                progress(f"{npa}: libphonenumber gives no region or no zone; --write skips it")
            continue
        our_region, our_zones = row
        if not geographic:
            findings.append({
                "kind": "unknown_to_libphonenumber", "npa": npa,
                "ours": {"region": our_region, "zones": our_zones},
                "libphonenumber": {"country": country,
                                   "types": sorted(type_name(t) for t in types)},
            })
            continue
        region, how = lib_region(npa, geocodes, country)
        if region is not None and not same_region(our_region, region):
            findings.append({
                "kind": "region_differs", "npa": npa, "ours": our_region,
                "libphonenumber": region, "how": how,
            })
        for zone in lib_zones(zones_by_prefix):
            if not any(clocks.same(zone, mine) for mine in our_zones):
                prefixes = sorted(k for k, v in zones_by_prefix.items() if zone in v)
                findings.append({
                    "kind": "zone_not_covered", "npa": npa, "ours": our_zones,
                    "libphonenumber": zone, "prefixes": prefixes[:10],
                    "prefix_count": len(prefixes),
                })
    return findings, derived, checked


def same_region(ours, theirs):
    """US-FL and US-FL; CA-YT/NT/NU and CA-NT/NU/YT; a country-only answer (US) agrees
    with any subdivision of it."""
    our_country, our_subs = subdivisions(ours)
    their_country, their_subs = subdivisions(theirs)
    if our_country != their_country:
        return False
    return not their_subs or our_subs == their_subs


def type_name(number_type):
    return phonenumbers.PhoneNumberType.to_string(number_type)


def append_rows(path, derived, version):
    today = datetime.date.today().isoformat()
    lines = [
        "",
        f"# Added {today} by `cargo xtask area-codes --write` from libphonenumber's geocoding and",
        f"# time-zone data (Python package phonenumbers {version}, Apache-2.0); check overlays",
        "# against the zones of the codes they overlay.",
    ]
    for npa in sorted(derived):
        region, zones = derived[npa]
        lines.append(f"{npa} {region:<12} {' '.join(zones)}".rstrip())
    text = path.read_text(encoding="utf-8")
    with path.open("a", encoding="utf-8") as f:
        if text and not text.endswith("\n"):
            f.write("\n")
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="exit 3 on a region_differs or missing_from_ours finding")
    mode.add_argument("--write", action="store_true",
                      help="append the missing geographic codes to the table")
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    parser.add_argument("--area-codes-rs", type=Path, default=DEFAULT_RUST,
                        help="the Rust module whose NON_GEOGRAPHIC lists the codes of no place")
    args = parser.parse_args()

    version = phonenumbers.__version__
    ours = read_table(args.table)
    non_geographic = read_non_geographic(args.area_codes_rs)
    progress(f"comparing {len(ours)} rows of {args.table.name} and {len(non_geographic)} "
             f"non-geographic codes with libphonenumber (phonenumbers {version})")
    findings, derived, checked = compare(ours, non_geographic)
    seen = set()
    open_findings = []
    for finding in findings:
        key = (finding["kind"], finding["npa"], finding["libphonenumber"])
        reason = REVIEWED.get(key) if isinstance(key[2], str) else None
        if reason is None:
            open_findings.append(finding)
        else:
            seen.add(key)
            finding["reviewed"] = reason
        emit(finding)
    for key in sorted(set(REVIEWED) - seen):
        progress(f"reviewed finding {key} no longer occurs: drop it from REVIEWED")
    by_kind = collections.Counter(f["kind"] for f in open_findings)
    failing = sum(by_kind[k] for k in FAILING)
    if args.write and derived:
        append_rows(args.table, derived, version)
        progress(f"appended {len(derived)} rows to {args.table}: update the row count in "
                 "domain/src/area_codes/tests.rs and run `cargo test -p callstream-domain`")
    elif args.write:
        progress("nothing to append")
    emit({
        "summary": "libphonenumber vs nanp_area_codes.txt",
        "checked": checked,
        "differences": len(open_findings),
        "reviewed": len(findings) - len(open_findings),
        "failing": failing,
        "by_kind": dict(sorted(by_kind.items())),
        "phonenumbers_version": version,
    })
    if args.check and failing:
        progress(f"{failing} finding(s) of kind {' or '.join(FAILING)}")
        return CHECK_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
