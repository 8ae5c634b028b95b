//! Turns what a lead said into tokens: lower case, punctuation dropped,
//! `3pm` split into `3` `pm`, `p.m.` joined into `pm`, `15:30` (or `3.30`)
//! kept as one clock token, `o'clock` written `oclock`.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// Digits, possibly with a decimal part (`1.5`).
    Num(f64),
    /// `H:MM` or `H.MM`; `padded` when written with a leading zero (`07:30`).
    Clock {
        hour: u32,
        minute: u32,
        padded: bool,
    },
    Word(String),
}

impl Tok {
    pub fn word(&self) -> Option<&str> {
        match self {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }

    pub fn is(&self, w: &str) -> bool {
        self.word() == Some(w)
    }

    /// How the token reads in a "matched" note.
    pub fn text(&self) -> String {
        match self {
            Tok::Num(n) => format!("{n}"),
            Tok::Clock { hour, minute, .. } => format!("{hour}:{minute:02}"),
            Tok::Word(w) => w.clone(),
        }
    }
}

pub(super) fn tokenise(input: &str) -> Vec<Tok> {
    let chars: Vec<char> = input.chars().flat_map(char::to_lowercase).collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let whole: String = chars[start..i].iter().collect();
            // A separator followed by digits: a clock (two digits) or a decimal.
            if i + 1 < chars.len()
                && (chars[i] == ':' || chars[i] == '.')
                && chars[i + 1].is_ascii_digit()
            {
                let sep = chars[i];
                let frac_start = i + 1;
                let mut j = frac_start;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
                let frac: String = chars[frac_start..j].iter().collect();
                if frac.len() == 2 && whole.len() <= 2 {
                    toks.push(Tok::Clock {
                        hour: whole.parse().unwrap_or(99),
                        minute: frac.parse().unwrap_or(99),
                        padded: whole.len() == 2 && whole.starts_with('0'),
                    });
                    i = j;
                    continue;
                }
                if sep == '.' {
                    let value = format!("{whole}.{frac}").parse().unwrap_or(f64::NAN);
                    toks.push(Tok::Num(value));
                    i = j;
                    continue;
                }
            }
            toks.push(Tok::Num(whole.parse().unwrap_or(f64::NAN)));
            continue;
        }
        if c.is_alphabetic() {
            let mut word = String::new();
            while i < chars.len() && (chars[i].is_alphabetic() || is_apostrophe(chars[i])) {
                if !is_apostrophe(chars[i]) {
                    word.push(chars[i]);
                }
                i += 1;
            }
            toks.push(Tok::Word(word));
            continue;
        }
        i += 1;
    }
    join_meridiem(toks)
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{2018}')
}

/// `a` `m` / `p` `m` after a time become `am` / `pm` (from `a.m.`).
fn join_meridiem(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::with_capacity(toks.len());
    let mut iter = toks.into_iter().peekable();
    while let Some(tok) = iter.next() {
        let after_time = matches!(out.last(), Some(Tok::Num(_) | Tok::Clock { .. }))
            || out
                .last()
                .is_some_and(|t| super::grammar::number_word(t).is_some());
        if after_time && (tok.is("a") || tok.is("p")) && iter.peek().is_some_and(|t| t.is("m")) {
            iter.next();
            out.push(Tok::Word(if tok.is("a") { "am" } else { "pm" }.into()));
            continue;
        }
        out.push(tok);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Tok {
        Tok::Word(s.into())
    }

    #[test]
    fn tokenises_the_usual_shapes() {
        let clock = |hour, minute| Tok::Clock {
            hour,
            minute,
            padded: false,
        };
        let cases: Vec<(&str, Vec<Tok>)> = vec![
            ("3pm", vec![Tok::Num(3.0), w("pm")]),
            ("3 P.M.", vec![Tok::Num(3.0), w("pm")]),
            ("15:30", vec![clock(15, 30)]),
            ("3.30pm", vec![clock(3, 30), w("pm")]),
            (
                "07:30",
                vec![Tok::Clock {
                    hour: 7,
                    minute: 30,
                    padded: true,
                }],
            ),
            ("in 1.5 hours", vec![w("in"), Tok::Num(1.5), w("hours")]),
            ("four o'clock", vec![w("four"), w("oclock")]),
            (
                "Tomorrow, at 10!",
                vec![w("tomorrow"), w("at"), Tok::Num(10.0)],
            ),
            ("forty-five", vec![w("forty"), w("five")]),
            ("ten a.m.", vec![w("ten"), w("am")]),
        ];
        for (input, expected) in cases {
            assert_eq!(tokenise(input), expected, "{input}");
        }
    }
}
