//! `/readyz`, cached: an answer (ready or not) is reused for a short period, so a flood of
//! probes checks Postgres and Kafka at most once a period. The same shape as the gateway's
//! `Readiness`.
//!
//! Guarantees: within the period every probe gets the last answer; concurrent probes after
//! it share one new check (the lock is held across it); a period of zero checks every time.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// The last readiness answer and when it was made.
pub struct Readiness {
    ttl: Duration,
    last: tokio::sync::Mutex<Option<(Instant, Result<(), ApiError>)>>,
}

impl Readiness {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The cached answer if fresh, else `probe`'s (then cached).
    pub async fn check<F>(&self, probe: impl FnOnce() -> F) -> Result<(), ApiError>
    where
        F: Future<Output = Result<(), ApiError>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = last.as_ref() {
            if at.elapsed() < self.ttl {
                return answer.clone();
            }
        }
        let answer = probe().await;
        *last = Some((Instant::now(), answer.clone()));
        answer
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    async fn probe_many(
        readiness: &Readiness,
        times: usize,
        answer: Result<(), ApiError>,
    ) -> usize {
        let probes = AtomicUsize::new(0);
        for _ in 0..times {
            let got = readiness
                .check(|| async {
                    probes.fetch_add(1, Ordering::SeqCst);
                    answer.clone()
                })
                .await;
            assert_eq!(got, answer);
        }
        probes.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn probes_within_the_period_are_answered_from_the_cache() {
        let readiness = Readiness::new(Duration::from_secs(3600));
        assert_eq!(probe_many(&readiness, 50, Ok(())).await, 1);
    }

    #[tokio::test]
    async fn a_failed_check_is_cached_too_so_a_flood_does_not_hammer_a_sick_dependency() {
        let readiness = Readiness::new(Duration::from_secs(3600));
        let down = Err(ApiError::Unavailable("kafka does not answer"));
        assert_eq!(probe_many(&readiness, 50, down).await, 1);
    }

    #[tokio::test]
    async fn a_period_of_zero_checks_every_time() {
        let readiness = Readiness::new(Duration::ZERO);
        assert_eq!(probe_many(&readiness, 5, Ok(())).await, 5);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_probes_share_one_check() {
        let readiness = Arc::new(Readiness::new(Duration::from_secs(3600)));
        let probes = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (readiness, probes) = (Arc::clone(&readiness), Arc::clone(&probes));
                tokio::spawn(async move {
                    readiness
                        .check(|| async move {
                            probes.fetch_add(1, Ordering::SeqCst);
                            tokio::task::yield_now().await;
                            Ok(())
                        })
                        .await
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.ok(), Some(Ok(())));
        }
        assert_eq!(probes.load(Ordering::SeqCst), 1);
    }
}
