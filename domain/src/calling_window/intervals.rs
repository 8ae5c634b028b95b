//! Half-open UTC intervals `[start, end)`: the building blocks of a
//! calling window. Lists handed between functions are sorted by start and
//! non-overlapping ("normalised").

use chrono::{DateTime, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Interval {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Interval {
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Interval {
        Interval { start, end }
    }

    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.start <= at && at < self.end
    }

    pub fn intersection(&self, other: &Interval) -> Option<Interval> {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end);
        (start < end).then_some(Interval { start, end })
    }
}

/// Sorts, drops empty intervals and merges overlapping or touching ones.
pub(super) fn normalise(mut list: Vec<Interval>) -> Vec<Interval> {
    list.retain(|iv| iv.start < iv.end);
    list.sort();
    let mut out: Vec<Interval> = Vec::with_capacity(list.len());
    for iv in list {
        match out.last_mut() {
            Some(last) if iv.start <= last.end => last.end = last.end.max(iv.end),
            _ => out.push(iv),
        }
    }
    out
}

/// The intersection of two normalised lists, normalised.
pub(super) fn intersect(a: &[Interval], b: &[Interval]) -> Vec<Interval> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        if let Some(piece) = a[i].intersection(&b[j]) {
            out.push(piece);
        }
        // Drop whichever ends first; the other may still meet the next one.
        if a[i].end <= b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn iv(a: u32, b: u32) -> Interval {
        let t = |h| Utc.with_ymd_and_hms(2026, 1, 1, h, 0, 0).unwrap();
        Interval::new(t(a), t(b))
    }

    #[test]
    fn normalise_merges_overlaps_and_touching() {
        let cases = [
            (vec![iv(3, 5), iv(1, 2)], vec![iv(1, 2), iv(3, 5)]),
            (vec![iv(1, 3), iv(2, 5)], vec![iv(1, 5)]),
            (vec![iv(1, 3), iv(3, 5)], vec![iv(1, 5)]),
            (vec![iv(1, 9), iv(2, 3)], vec![iv(1, 9)]),
            (vec![iv(4, 4)], vec![]),
        ];
        for (input, expected) in cases {
            assert_eq!(normalise(input.clone()), expected, "{input:?}");
        }
    }

    #[test]
    fn intersect_keeps_only_common_parts() {
        let cases = [
            (vec![iv(1, 5)], vec![iv(3, 8)], vec![iv(3, 5)]),
            (
                vec![iv(1, 2), iv(4, 6)],
                vec![iv(0, 10)],
                vec![iv(1, 2), iv(4, 6)],
            ),
            (vec![iv(1, 3)], vec![iv(3, 4)], vec![]),
            (
                vec![iv(1, 10)],
                vec![iv(2, 3), iv(5, 6), iv(9, 12)],
                vec![iv(2, 3), iv(5, 6), iv(9, 10)],
            ),
        ];
        for (a, b, expected) in cases {
            assert_eq!(intersect(&a, &b), expected);
            assert_eq!(intersect(&b, &a), expected);
        }
    }
}
