//! Clock times: "3pm", "3:30 pm", "15:30", "at 3", "at ten thirty",
//! "four o'clock", "half past four", "quarter to five", "noon", "midnight",
//! "end of day". A bare number counts only after a cue word or before
//! am/pm/o'clock.

use super::super::lexer::Tok;
use super::{is_any, names_day, unit_minutes, whole, Clock, Meridiem, Spoken};

const CUES: &[&str] = &[
    "at",
    "around",
    "about",
    "after",
    "from",
    "say",
    "approximately",
    "round",
    "by",
];

fn meridiem(toks: &[Tok], i: usize) -> Option<Meridiem> {
    match toks.get(i)?.word()? {
        "am" => Some(Meridiem::Am),
        "pm" => Some(Meridiem::Pm),
        _ => None,
    }
}

/// Clock times: "3pm", "3:30 pm", "15:30", "at 3", "at ten thirty",
/// "four o'clock", "half past four", "quarter to five", "noon", "midnight",
/// "end of day".
pub(super) fn clock(toks: &[Tok], i: usize, spoken: &mut Spoken) -> Option<usize> {
    if spoken.clock.is_some() {
        return None;
    }
    let cue = usize::from(is_any(toks, i, CUES));
    // A number right after a day is an hour too: "Thursday 3", "tomorrow 10".
    let after_day = i > 0 && names_day(toks, i - 1);
    let j = i + cue;
    let (found, used) = if let Some(named) = named_time(toks, j) {
        named
    } else if let Some(found) = minutes_and_hour(toks, j) {
        found
    } else if let Some(Tok::Clock {
        hour,
        minute,
        padded,
    }) = toks.get(j)
    {
        let (hour, minute, padded) = (*hour, *minute, *padded);
        if hour > 23 || minute > 59 {
            return None;
        }
        let m = meridiem(toks, j + 1);
        let c = Clock {
            hour,
            minute,
            meridiem: m,
            exact: m.is_none() && (padded || hour == 0 || hour > 12),
        };
        (c, 1 + usize::from(m.is_some()))
    } else {
        let (hour, mut used) = whole(toks, j, 0..=23)?;
        let mut minute = 0;
        if let Some((m, n)) = whole(toks, j + used, 0..=59).filter(|_| hour <= 12) {
            // "ten thirty", "10 30": minutes follow the hour.
            if unit_minutes(toks, j + used + n).is_none() {
                minute = m;
                used += n;
            }
        }
        let m = meridiem(toks, j + used);
        let oclock = is_any(toks, j + used, &["oclock"]);
        if cue == 0 && !after_day && m.is_none() && !oclock {
            return None;
        }
        if m.is_some() && !(1..=12).contains(&hour) {
            return None;
        }
        let c = Clock {
            hour,
            minute,
            meridiem: m,
            exact: m.is_none() && (hour == 0 || hour > 12),
        };
        (c, used + usize::from(m.is_some() || oclock))
    };
    spoken.clock = Some(found);
    Some(cue + used)
}

fn named_time(toks: &[Tok], j: usize) -> Option<(Clock, usize)> {
    let exact = |hour| Clock {
        hour,
        minute: 0,
        meridiem: None,
        exact: true,
    };
    // "12 noon"
    if matches!(toks.get(j), Some(Tok::Num(n)) if *n == 12.0) && is_any(toks, j + 1, &["noon"]) {
        return Some((exact(12), 2));
    }
    if is_any(toks, j, &["noon", "midday"]) {
        return Some((exact(12), 1));
    }
    if is_any(toks, j, &["midnight"]) {
        return Some((exact(0), 1));
    }
    if is_any(toks, j, &["eod", "cob"]) {
        return Some((exact(17), 1));
    }
    let of_the = |k: usize| if is_any(toks, k, &["the"]) { k + 1 } else { k };
    if is_any(toks, j, &["end", "close"]) && is_any(toks, j + 1, &["of"]) {
        let k = of_the(j + 2);
        if is_any(toks, k, &["day", "business"]) {
            return Some((exact(17), k + 1 - j));
        }
    }
    None
}

/// "half past four", "quarter to five", "ten past six", "twenty minutes to three".
fn minutes_and_hour(toks: &[Tok], j: usize) -> Option<(Clock, usize)> {
    let (minutes, mut used) = if is_any(toks, j, &["half"]) {
        (30, 1)
    } else if is_any(toks, j, &["quarter"]) {
        (15, 1)
    } else if is_any(toks, j, &["a"]) && is_any(toks, j + 1, &["quarter"]) {
        (15, 2)
    } else {
        whole(toks, j, 1..=59)?
    };
    let said_minutes = is_any(toks, j + used, &["minute", "minutes", "min", "mins"]);
    if said_minutes {
        used += 1;
    } else if minutes % 5 != 0 {
        // "from one to three" is a range, not 2:59; "five to three" is 2:55.
        return None;
    }
    let before = if is_any(toks, j + used, &["past", "after"]) {
        false
    } else if is_any(toks, j + used, &["to", "till", "til", "before", "of"]) {
        true
    } else {
        return None;
    };
    used += 1;
    let (hour, n) = whole(toks, j + used, 1..=12)?;
    used += n;
    let (hour, minute) = if before {
        (if hour == 1 { 12 } else { hour - 1 }, 60 - minutes)
    } else {
        (hour, minutes)
    };
    if minute >= 60 {
        return None;
    }
    let m = meridiem(toks, j + used);
    used += usize::from(m.is_some());
    Some((
        Clock {
            hour,
            minute,
            meridiem: m,
            exact: false,
        },
        used,
    ))
}
