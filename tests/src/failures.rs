//! The check every owner's registry test makes (see `callstream_domain::failures`):
//! the scenario of a permanent failure opened exactly one exception of its type.

use callstream_domain::failures::PermanentFailure;
use callstream_schemas::{ExceptionEvent, ExceptionStatus, ExceptionType};

/// Asserts that `emitted` holds exactly one open exception of the type `failure` opens,
/// with a detail an operator can read; returns it.
pub fn assert_opened(failure: PermanentFailure, emitted: &[ExceptionEvent]) -> ExceptionEvent {
    let wanted = ExceptionType::from(failure);
    let opened: Vec<&ExceptionEvent> = emitted
        .iter()
        .filter(|e| e.exception_type == wanted && e.status == ExceptionStatus::Open)
        .collect();
    assert_eq!(
        opened.len(),
        1,
        "{failure}: expected one open {wanted} exception, got {emitted:#?}"
    );
    let e = opened[0].clone();
    assert!(
        e.detail.as_deref().is_some_and(|d| !d.trim().is_empty()),
        "{failure}: the exception says nothing: {e:?}"
    );
    e
}

/// The failure of a scenario-less kind: the registry gave `owner` a kind its test does
/// not drive.
pub fn no_scenario(owner: &str, failure: PermanentFailure) -> ! {
    panic!(
        "{failure} is declared {owner}'s in callstream_domain::failures but its test has no \
         scenario for it: add one"
    )
}

#[cfg(test)]
mod tests {
    use callstream_domain::failures::Owner;

    /// Every owner in the registry has a test that drives its kinds: some test file
    /// loops over `PermanentFailure::of(Owner::X)`.
    #[test]
    fn every_owner_has_a_registry_test() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace")
            .to_path_buf();
        let mut sources = String::new();
        let mut dirs = vec![root.join("processors"), root.join("projections")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() && !path.ends_with("src") {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && path.components().any(|c| c.as_os_str() == "tests")
                {
                    sources.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        for owner in Owner::ALL {
            let call = format!("PermanentFailure::of(Owner::{owner:?})");
            assert!(
                sources.contains(&call),
                "no test drives the permanent failures of {owner:?} (`{call}`)"
            );
        }
    }
}
