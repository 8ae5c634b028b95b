//! Recovery of missing completions (`callstream process recovery`). Work in progress.
