//! The delivery chart of the Today page, drawn as SVG on the server (no chart library, no
//! script): one bar per 10-minute bucket of launches, split into delivered by the platform,
//! recovered, missing and still open; the delivery rate as a line; the alert threshold as
//! a dashed line. The same figures are in a table below it for screen readers.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use maud::{html, Markup};

use crate::model::DeliveryBucket;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 40.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 24.0;
const BUCKETS_PER_DAY: i64 = 144;

const DELIVERED: &str = "#166534";
const RECOVERED: &str = "#1d4ed8";
const MISSING: &str = "#b91c1c";
const OPEN: &str = "#9ca3af";
const RATE: &str = "#111827";
const THRESHOLD: &str = "#b45309";

/// The chart of one day's buckets starting at `day_start` (in `zone`, for the hour marks).
pub fn delivery(
    buckets: &[DeliveryBucket],
    day_start: DateTime<Utc>,
    threshold: f64,
    zone: Tz,
) -> Markup {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let bar_w = plot_w / BUCKETS_PER_DAY as f64;
    let most = buckets.iter().map(|b| b.accepted).max().unwrap_or(0).max(1) as f64;
    let index = |b: &DeliveryBucket| (b.bucket_start - day_start).num_minutes() / 10;
    let y_count = |n: f64| TOP + plot_h - n / most * plot_h;
    let y_rate = |r: f64| TOP + plot_h - r.clamp(0.0, 1.0) * plot_h;
    let rate_points: Vec<String> = buckets
        .iter()
        .filter(|b| b.accepted > 0 && (0..BUCKETS_PER_DAY).contains(&index(b)))
        .map(|b| {
            let x = LEFT + (index(b) as f64 + 0.5) * bar_w;
            format!("{x:.1},{:.1}", y_rate(b.delivery_rate))
        })
        .collect();
    let threshold_y = y_rate(threshold);
    html! {
        svg class="chart" viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img"
            aria-labelledby="chart-title chart-desc" {
            title id="chart-title" { "Delivery per 10 minutes" }
            desc id="chart-desc" {
                "Bars: launches per 10-minute bucket, split into delivered by the platform, "
                "recovered, missing and still open. Line: delivery rate. Dashed line: the alert "
                "threshold of " (format!("{:.0}", threshold * 100.0)) " %."
            }
            // Axes: counts on the left, the rate on the right.
            line x1=(LEFT) y1=(TOP + plot_h) x2=(LEFT + plot_w) y2=(TOP + plot_h) stroke="#6b7280" {}
            text x=(LEFT - 4.0) y=(TOP + 10.0) text-anchor="end" font-size="11" { (most as i64) }
            text x=(LEFT - 4.0) y=(TOP + plot_h) text-anchor="end" font-size="11" { "0" }
            text x=(LEFT + plot_w + 4.0) y=(TOP + 10.0) font-size="11" { "100%" }
            text x=(LEFT + plot_w + 4.0) y=(TOP + plot_h) font-size="11" { "0%" }
            @for hour in (0..=24).step_by(3) {
                @let x = LEFT + (hour * 6) as f64 * bar_w;
                @let t = day_start + Duration::hours(hour);
                line x1=(x) y1=(TOP + plot_h) x2=(x) y2=(TOP + plot_h + 4.0) stroke="#6b7280" {}
                text x=(x) y=(HEIGHT - 6.0) text-anchor="middle" font-size="11" {
                    (t.with_timezone(&zone).format("%H:%M"))
                }
            }
            @for b in buckets.iter().filter(|b| (0..BUCKETS_PER_DAY).contains(&index(b))) {
                @let x = LEFT + index(b) as f64 * bar_w + 0.5;
                g {
                    title {
                        (b.bucket_start.with_timezone(&zone).format("%H:%M %Z")) ": "
                        (b.accepted) " launches, " (b.delivered) " delivered, " (b.recovered)
                        " recovered, " (b.missing) " missing"
                    }
                    @for (base, n, colour) in stack(b) {
                        rect x=(format!("{x:.1}")) y=(format!("{:.1}", y_count((base + n) as f64)))
                            width=(format!("{:.1}", (bar_w - 1.0).max(1.0)))
                            height=(format!("{:.1}", n as f64 / most * plot_h)) fill=(colour) {}
                    }
                }
            }
            line x1=(LEFT) x2=(LEFT + plot_w) y1=(format!("{threshold_y:.1}")) y2=(format!("{threshold_y:.1}"))
                stroke=(THRESHOLD) stroke-width="2" stroke-dasharray="6 4" {}
            @if !rate_points.is_empty() {
                polyline points=(rate_points.join(" ")) fill="none" stroke=(RATE) stroke-width="1.5" {}
            }
        }
        p class="legend" {
            span { span class="swatch sw-delivered" {} "delivered by the platform" }
            span { span class="swatch sw-recovered" {} "recovered" }
            span { span class="swatch sw-missing" {} "missing" }
            span { span class="swatch sw-open" {} "not yet due" }
            span { "— rate · - - alert threshold " (format!("{:.0}", threshold * 100.0)) " %" }
        }
    }
}

/// A bucket's bar as stacked parts: (count below it, its count, its colour), empty parts
/// left out. The parts add up to the launches: delivered by the platform, recovered, then
/// of the rest those still missing and those not yet due. (`missing` counts every launch
/// that ever went missing, recovered or late-delivered ones too, so it is not stacked as
/// it is.)
fn stack(b: &DeliveryBucket) -> Vec<(i64, i64, &'static str)> {
    let rest = (b.accepted - b.delivered - b.recovered).max(0);
    // Every recovered launch went missing first.
    let still_missing = (b.missing - b.recovered).max(0).min(rest);
    let mut base = 0;
    [
        (b.delivered, DELIVERED),
        (b.recovered, RECOVERED),
        (still_missing, MISSING),
        (rest - still_missing, OPEN),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, colour)| {
        let part = (base, n, colour);
        base += n;
        part
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(start: DateTime<Utc>, accepted: i64, delivered: i64, missing: i64) -> DeliveryBucket {
        DeliveryBucket {
            bucket_start: start,
            accepted,
            delivered,
            recovered: 0,
            missing,
            delivery_rate: if accepted == 0 {
                0.0
            } else {
                delivered as f64 / accepted as f64
            },
        }
    }

    #[test]
    fn bars_rate_and_threshold_are_drawn() {
        let day: DateTime<Utc> = "2026-12-04T06:00:00Z".parse().unwrap();
        let buckets = [
            bucket(day + Duration::minutes(540), 10, 10, 0),
            bucket(day + Duration::minutes(550), 10, 5, 5),
        ];
        let svg = delivery(&buckets, day, 0.8, chrono_tz::America::Chicago).into_string();
        // Two bars of delivered, one of missing.
        assert_eq!(svg.matches(&format!("fill=\"{DELIVERED}\"")).count(), 2);
        assert_eq!(svg.matches(&format!("fill=\"{MISSING}\"")).count(), 1);
        assert!(svg.contains("stroke-dasharray"), "threshold line");
        assert!(svg.contains("<polyline"), "rate line");
        assert!(svg.contains("09:00 CST: 10 launches"), "{svg}");
        // The threshold's height: 80 % of the plot from its bottom.
        let y = TOP + (HEIGHT - TOP - BOTTOM) * 0.2;
        assert!(svg.contains(&format!("y1=\"{y:.1}\"")), "{svg}");
    }

    #[test]
    fn a_bar_never_stacks_higher_than_its_launches() {
        // 10 launches: 7 delivered (one of them late, after going missing), 2 recovered,
        // 1 still missing; 4 went missing in all.
        let b = DeliveryBucket {
            bucket_start: "2026-12-04T15:00:00Z".parse().unwrap(),
            accepted: 10,
            delivered: 7,
            recovered: 2,
            missing: 4,
            delivery_rate: 0.7,
        };
        assert_eq!(
            stack(&b),
            [(0, 7, DELIVERED), (7, 2, RECOVERED), (9, 1, MISSING)]
        );
        let open = DeliveryBucket { accepted: 12, ..b };
        assert_eq!(stack(&open)[2..], [(9, 2, MISSING), (11, 1, OPEN)]);
    }

    #[test]
    fn an_empty_day_draws_axes_and_threshold_only() {
        let day: DateTime<Utc> = "2026-12-04T00:00:00Z".parse().unwrap();
        let svg = delivery(&[], day, 0.5, Tz::UTC).into_string();
        assert!(!svg.contains("<rect"));
        assert!(!svg.contains("<polyline"));
        assert!(svg.contains("stroke-dasharray"));
    }
}
