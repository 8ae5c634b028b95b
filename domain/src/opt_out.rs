//! A lead's opt-out in the words the call analysis reports, not only its
//! `do_not_call` flag: "stop", "quit", "remove me", "do not call", "take me
//! off your list", "unsubscribe", and the way summaries put them ("asked to
//! be removed"). Any of these counts as do-not-call, which is sticky: when in
//! doubt, hold the call.
//!
//! Guarantees: pure and total (any text, any case, any punctuation); phrases
//! match on word boundaries, so "stopped by the office" or "unstoppable" is
//! not an opt-out, but a reply that is only "stop" or "quit" is.

/// Phrases that are an opt-out wherever they appear (as whole words).
const PHRASES: &[&str] = &[
    "stop calling",
    "stop call",
    "stop contacting",
    "quit calling",
    "remove me",
    "remove my number",
    "be removed",
    "take me off",
    "take my number off",
    "do not call",
    "dont call",
    "do not contact",
    "dont contact",
    "never call",
    "no more calls",
    "unsubscribe",
    "opt out",
    "opted out",
    "opting out",
];

/// Replies that are an opt-out when they are the whole of what was said.
const WHOLE_REPLIES: &[&str] = &["stop", "quit", "end", "cancel", "stopall"];

/// Whether `text` says the lead does not want to be called.
pub fn says_opt_out(text: &str) -> bool {
    let words = normalise(text);
    if words.is_empty() {
        return false;
    }
    let joined = format!(" {} ", words.join(" "));
    if PHRASES.iter().any(|p| joined.contains(&format!(" {p} "))) {
        return true;
    }
    WHOLE_REPLIES.contains(&words.join(" ").as_str())
}

/// Lowercase words, apostrophes dropped ("don't" is "dont"), everything else that is not
/// a letter or digit a separator ("opt-out" is "opt out").
fn normalise(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['\'', '’'], "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn opt_outs_in_their_common_forms() {
        for said in [
            "STOP",
            "Stop.",
            "quit",
            "Please stop calling me",
            "Stop calling, please",
            "remove me from your list",
            "Take me off the list!",
            "Do not call this number again",
            "don't call me",
            "Don’t contact me",
            "Lead asked to be removed.",
            "unsubscribe",
            "I want to opt-out",
            "no more calls please",
        ] {
            assert!(says_opt_out(said), "{said}");
        }
    }

    #[test]
    fn words_that_only_look_like_one_are_not() {
        for said in [
            "",
            "   ",
            "I stopped by the campus yesterday",
            "she is unstoppable",
            "call me back at 5",
            "stop by tomorrow and call me",
            "the quiet hours",
            "Interested in the nursing program; call next week",
        ] {
            assert!(!says_opt_out(said), "{said}");
        }
    }

    proptest! {
        /// Total on any input, and an opt-out phrase stays one whatever surrounds it.
        #[test]
        fn any_text_is_read_and_a_phrase_anywhere_counts(
            before in "[a-zA-Z ,.]{0,40}",
            after in "[a-zA-Z ,.]{0,40}",
            any in "\\PC{0,200}",
        ) {
            let _ = says_opt_out(&any);
            let text = format!("{before} . remove me . {after}");
            prop_assert!(says_opt_out(&text));
        }
    }
}
