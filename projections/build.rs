//! `sqlx::migrate!` embeds ../migrations at compile time; without this, a new migration file
//! would not make cargo rebuild the crate, and the binary would run without it.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
