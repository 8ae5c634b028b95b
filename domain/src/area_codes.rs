//! Placeholder: filled in by issue 5.
