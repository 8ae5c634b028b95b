//! Totals of a `cargo test` run, from the `test result:` line each test binary prints.
//!
//! Pure parsing, so `cargo xtask test` can stream cargo's output through unchanged and still
//! end with one line that says how the whole workspace did.

/// Counts summed over every test binary (unit, integration and doc tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub ignored: u64,
    /// How many `test result:` lines were seen, i.e. test binaries that ran to the end.
    pub binaries: u64,
}

impl Tally {
    /// Adds the counts of one output line, if it is a `test result:` line.
    pub fn add_line(&mut self, line: &str) {
        if let Some(one) = parse_result_line(line) {
            self.passed += one.passed;
            self.failed += one.failed;
            self.ignored += one.ignored;
            self.binaries += 1;
        }
    }
}

/// Parses `test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; ...`.
pub fn parse_result_line(line: &str) -> Option<Tally> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let (_verdict, counts) = rest.split_once(". ")?;
    let mut tally = Tally::default();
    for part in counts.split(';') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match what {
            "passed" => tally.passed = n,
            "failed" => tally.failed = n,
            "ignored" => tally.ignored = n,
            _ => {}
        }
    }
    Some(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_result_lines_and_ignores_the_rest() {
        let cases = [
            (
                "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.03s",
                Some((12, 0, 1)),
            ),
            (
                "test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s",
                Some((3, 2, 0)),
            ),
            ("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s", Some((0, 0, 0))),
            ("test foo::bar ... ok", None),
            ("running 3 tests", None),
            ("", None),
        ];
        for (line, expected) in cases {
            let got = parse_result_line(line).map(|t| (t.passed, t.failed, t.ignored));
            assert_eq!(got, expected, "{line}");
        }
    }

    #[test]
    fn tally_sums_every_binary() {
        let output = "\
running 2 tests
test a ... ok
test b ... ok
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
     Running tests/e2e.rs
test result: FAILED. 1 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 3.1s
";
        let mut tally = Tally::default();
        output.lines().for_each(|l| tally.add_line(l));
        assert_eq!(
            tally,
            Tally {
                passed: 3,
                failed: 1,
                ignored: 2,
                binaries: 2
            }
        );
    }
}
