//! Finds the time expressions in a token list: a relative offset ("in two
//! hours"), a day ("tomorrow", "next Monday"), a part of the day
//! ("afternoon") and a clock time ("3pm", "at half past four"). Words it
//! does not know are skipped, so the expressions can sit inside a longer
//! sentence. A bare number is a time only after a cue word ("at 3") or
//! before `am`/`pm`/`o'clock`, so phone numbers and counts are not read as
//! times.

use chrono::Weekday;

use super::lexer::Tok;

mod clock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DaySpec {
    Today,
    Tomorrow,
    InDays(u32),
    /// The coming `day`; `strict` ("next Monday") skips today.
    Weekday {
        day: Weekday,
        strict: bool,
    },
    /// Next calendar week (Monday-based), on `day` or its first day.
    NextWeek {
        day: Option<Weekday>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DayPart {
    Morning,
    Lunch,
    Afternoon,
    Evening,
    Tonight,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Meridiem {
    Am,
    Pm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Clock {
    pub hour: u32,
    pub minute: u32,
    pub meridiem: Option<Meridiem>,
    /// Unambiguous as said: 24-hour, zero-padded, or a named time (noon).
    pub exact: bool,
}

/// "in two hours" / "in three days".
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Offset {
    /// Elapsed time: "in two hours" is two real hours, across DST too.
    Minutes(f64),
    /// Calendar days: "in two days" keeps the wall-clock time.
    Days(u32),
}

/// Everything found in the phrase; the first of each kind wins.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Spoken {
    pub offset: Option<Offset>,
    pub day: Option<DaySpec>,
    pub part: Option<DayPart>,
    pub clock: Option<Clock>,
    /// The tokens that were read, for the record.
    pub matched: Vec<String>,
}

impl Spoken {
    pub fn is_empty(&self) -> bool {
        self.offset.is_none() && self.day.is_none() && self.part.is_none() && self.clock.is_none()
    }
}

pub(super) fn parse(toks: &[Tok]) -> Spoken {
    let mut spoken = Spoken::default();
    let mut i = 0;
    while i < toks.len() {
        let used = relative(toks, i, &mut spoken)
            .or_else(|| day(toks, i, &mut spoken))
            .or_else(|| clock::clock(toks, i, &mut spoken))
            .or_else(|| part(toks, i, &mut spoken));
        match used {
            Some(n) => {
                spoken.matched.extend(toks[i..i + n].iter().map(Tok::text));
                i += n;
            }
            None => i += 1,
        }
    }
    spoken
}

/// The value of a single number word.
pub(super) fn number_word(tok: &Tok) -> Option<u32> {
    const SMALL: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 4] = ["twenty", "thirty", "forty", "fifty"];
    let w = tok.word()?;
    if let Some(n) = SMALL.iter().position(|s| *s == w) {
        return u32::try_from(n).ok();
    }
    TENS.iter()
        .position(|s| *s == w)
        .and_then(|n| u32::try_from(n).ok())
        .map(|n| 20 + 10 * n)
}

/// A number at `i` (digits, or words like "forty five"), and tokens used.
fn number(toks: &[Tok], i: usize) -> Option<(f64, usize)> {
    match toks.get(i)? {
        Tok::Num(n) if n.is_finite() => Some((*n, 1)),
        tok => {
            let n = number_word(tok)?;
            // "forty five": a tens word followed by a unit word.
            if n >= 20 && n % 10 == 0 {
                if let Some(unit) = toks
                    .get(i + 1)
                    .and_then(number_word)
                    .filter(|u| (1..10).contains(u))
                {
                    return Some((f64::from(n + unit), 2));
                }
            }
            Some((f64::from(n), 1))
        }
    }
}

/// A whole number in `range` at `i`.
pub(super) fn whole(
    toks: &[Tok],
    i: usize,
    range: std::ops::RangeInclusive<u32>,
) -> Option<(u32, usize)> {
    let (n, used) = number(toks, i)?;
    let int = n as u32;
    (n.fract() == 0.0 && n >= 0.0 && range.contains(&int)).then_some((int, used))
}

pub(super) fn is_any(toks: &[Tok], i: usize, words: &[&str]) -> bool {
    toks.get(i)
        .and_then(Tok::word)
        .is_some_and(|w| words.contains(&w))
}

/// A unit word: minutes it is worth, and whether it counts calendar days.
pub(super) fn unit_minutes(toks: &[Tok], i: usize) -> Option<(f64, bool)> {
    match toks.get(i)?.word()? {
        "minute" | "minutes" | "min" | "mins" => Some((1.0, false)),
        "hour" | "hours" | "hr" | "hrs" | "h" => Some((60.0, false)),
        "day" | "days" => Some((24.0 * 60.0, true)),
        "week" | "weeks" => Some((7.0 * 24.0 * 60.0, true)),
        _ => None,
    }
}

/// "in two hours", "in half an hour", "in an hour and a half",
/// "in a couple of hours", "30 minutes from now".
fn relative(toks: &[Tok], i: usize, spoken: &mut Spoken) -> Option<usize> {
    if spoken.offset.is_some() {
        return None;
    }
    let lead = usize::from(is_any(toks, i, &["in", "within"]));
    let mut j = i + lead;
    let qty = if is_any(toks, j, &["half"]) && is_any(toks, j + 1, &["an", "a"]) {
        j += 2;
        0.5
    } else if is_any(toks, j, &["a", "an"]) && is_any(toks, j + 1, &["couple"]) {
        j += 2 + usize::from(is_any(toks, j + 2, &["of"]));
        2.0
    } else if is_any(toks, j, &["couple"]) {
        j += 1 + usize::from(is_any(toks, j + 1, &["of"]));
        2.0
    } else if is_any(toks, j, &["a", "an"]) {
        j += 1;
        1.0
    } else {
        let (n, used) = number(toks, j)?;
        j += used;
        n
    };
    let (unit, calendar) = unit_minutes(toks, j)?;
    j += 1;
    let mut qty = qty;
    if is_any(toks, j, &["and"]) && is_any(toks, j + 1, &["a"]) && is_any(toks, j + 2, &["half"]) {
        qty += 0.5;
        j += 3;
    }
    let from_now = is_any(toks, j, &["from"]) && is_any(toks, j + 1, &["now"]);
    if from_now {
        j += 2;
    }
    if lead == 0 && !from_now {
        return None;
    }
    let minutes = qty * unit;
    let days = minutes / (24.0 * 60.0);
    spoken.offset = Some(
        if calendar && days.fract() == 0.0 && days >= 0.0 && days <= f64::from(u32::MAX) {
            Offset::Days(days as u32)
        } else {
            Offset::Minutes(minutes)
        },
    );
    Some(j - i)
}

/// A weekday name at `i`. The short forms that are also English words
/// ("sat", "sun", "wed") count only before a time or a part of the day.
fn weekday(toks: &[Tok], i: usize) -> Option<Weekday> {
    let day = match toks.get(i)?.word()? {
        "monday" | "mon" => Weekday::Mon,
        "tuesday" | "tue" | "tues" => Weekday::Tue,
        "wednesday" | "weds" => Weekday::Wed,
        "thursday" | "thu" | "thur" | "thurs" => Weekday::Thu,
        "friday" | "fri" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        short @ ("sat" | "sun" | "wed") => {
            let next = toks.get(i + 1)?;
            let before_time = matches!(next, Tok::Num(_) | Tok::Clock { .. })
                || next.is("at")
                || part_word(next).is_some();
            if !before_time {
                return None;
            }
            match short {
                "sat" => Weekday::Sat,
                "sun" => Weekday::Sun,
                _ => Weekday::Wed,
            }
        }
        _ => return None,
    };
    Some(day)
}

/// Whether the token at `i` names a day ("tomorrow", "Monday", "today"):
/// a number right after one is an hour ("Thursday 3").
pub(super) fn names_day(toks: &[Tok], i: usize) -> bool {
    is_tomorrow(toks, i)
        || is_any(toks, i, &["today", "tonight", "tonite"])
        || weekday(toks, i).is_some()
}

fn is_tomorrow(toks: &[Tok], i: usize) -> bool {
    is_any(
        toks,
        i,
        &[
            "tomorrow",
            "tomorow",
            "tommorow",
            "tommorrow",
            "tmrw",
            "tmr",
            "tmrow",
        ],
    )
}

/// "today", "tonight", "tomorrow", "the day after tomorrow", "Monday",
/// "next Monday", "this morning", "next week", "Tuesday next week".
fn day(toks: &[Tok], i: usize, spoken: &mut Spoken) -> Option<usize> {
    let set_day = |spoken: &mut Spoken, d: DaySpec| {
        match (spoken.day, d) {
            (None, _) => spoken.day = Some(d),
            // "next week ... Tuesday" / "Tuesday ... next week" combine.
            (Some(DaySpec::NextWeek { day: None }), DaySpec::Weekday { day, .. })
            | (Some(DaySpec::Weekday { day, .. }), DaySpec::NextWeek { day: None }) => {
                spoken.day = Some(DaySpec::NextWeek { day: Some(day) })
            }
            _ => {}
        }
    };
    if is_any(toks, i, &["day"]) && is_any(toks, i + 1, &["after"]) && is_tomorrow(toks, i + 2) {
        set_day(spoken, DaySpec::InDays(2));
        return Some(3);
    }
    if is_any(toks, i, &["today"]) {
        set_day(spoken, DaySpec::Today);
        return Some(1);
    }
    if is_any(toks, i, &["tonight", "tonite"]) {
        set_day(spoken, DaySpec::Today);
        spoken.part.get_or_insert(DayPart::Tonight);
        return Some(1);
    }
    if is_tomorrow(toks, i) {
        set_day(spoken, DaySpec::Tomorrow);
        return Some(1);
    }
    if is_any(toks, i, &["next"]) && is_any(toks, i + 1, &["week"]) {
        set_day(spoken, DaySpec::NextWeek { day: None });
        return Some(2);
    }
    let strict = is_any(toks, i, &["next"]);
    let skip = usize::from(strict || is_any(toks, i, &["this", "on", "coming"]));
    if let Some(day) = weekday(toks, i + skip) {
        set_day(spoken, DaySpec::Weekday { day, strict });
        return Some(skip + 1);
    }
    // "this morning" / "this afternoon" / "this evening": today.
    if is_any(toks, i, &["this"]) && toks.get(i + 1).and_then(part_word).is_some() {
        set_day(spoken, DaySpec::Today);
        return Some(1);
    }
    None
}

fn part_word(tok: &Tok) -> Option<DayPart> {
    match tok.word()? {
        "morning" => Some(DayPart::Morning),
        "lunch" | "lunchtime" => Some(DayPart::Lunch),
        "afternoon" => Some(DayPart::Afternoon),
        "evening" => Some(DayPart::Evening),
        "night" => Some(DayPart::Tonight),
        _ => None,
    }
}

/// "morning", "afternoon", "evening", "night", "lunchtime".
fn part(toks: &[Tok], i: usize, spoken: &mut Spoken) -> Option<usize> {
    // "after lunch" is the afternoon.
    if is_any(toks, i, &["after"]) && is_any(toks, i + 1, &["lunch", "lunchtime"]) {
        spoken.part.get_or_insert(DayPart::Afternoon);
        return Some(2);
    }
    let p = toks.get(i).and_then(part_word)?;
    spoken.part.get_or_insert(p);
    Some(1)
}
