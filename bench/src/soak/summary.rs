//! What a sampled series did after warm-up: min, max, last, the spread (max − min) ÷ min that
//! the flatness target of issue 18 is judged on, and a least-squares trend that tells a slow
//! leak (a steady slope) from noise (a spread without one).

/// The summary of one series after warm-up.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSummary {
    /// Series name (the CSV column).
    pub name: &'static str,
    /// Samples after warm-up.
    pub samples: usize,
    /// Smallest value after warm-up.
    pub min: f64,
    /// Largest value after warm-up.
    pub max: f64,
    /// The last sample.
    pub last: f64,
    /// (max − min) ÷ min; 0 for a series that stayed at 0, infinite for one that left 0.
    pub spread: f64,
    /// Least-squares slope over the window, as a fraction of the mean per 10 minutes.
    pub trend_per_10min: f64,
    /// Whether the spread is within the tolerance; `None` for series that are not judged
    /// (gauges of in-flight work, which follow the load's own fluctuation).
    pub flat: Option<bool>,
}

/// How a series is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    /// Must stay within the tolerance after warm-up.
    Flat,
    /// Reported only.
    Report,
}

/// Summarises `points` (seconds since start, value) after `warm_up_s`; `None` when no sample is
/// left after warm-up.
pub fn summarize(
    name: &'static str,
    points: &[(f64, f64)],
    warm_up_s: f64,
    tolerance: f64,
    judge: Judge,
) -> Option<SeriesSummary> {
    let window: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(t, v)| *t >= warm_up_s && v.is_finite())
        .collect();
    let last = window.last()?.1;
    let min = window.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let max = window.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let spread = if max == min {
        0.0
    } else if min <= 0.0 {
        f64::INFINITY
    } else {
        (max - min) / min
    };
    Some(SeriesSummary {
        name,
        samples: window.len(),
        min,
        max,
        last,
        spread,
        trend_per_10min: trend(&window),
        flat: match judge {
            Judge::Flat => Some(spread <= tolerance),
            Judge::Report => None,
        },
    })
}

/// Slope of the least-squares line through `window`, per 600 s, relative to the mean value.
fn trend(window: &[(f64, f64)]) -> f64 {
    let n = window.len() as f64;
    if window.len() < 2 {
        return 0.0;
    }
    let mean_t = window.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_v = window.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut cov, mut var) = (0.0, 0.0);
    for (t, v) in window {
        cov += (t - mean_t) * (v - mean_v);
        var += (t - mean_t) * (t - mean_t);
    }
    if var == 0.0 || mean_v == 0.0 {
        return 0.0;
    }
    cov / var * 600.0 / mean_v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[f64]) -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as f64 * 10.0, *v))
            .collect()
    }

    #[test]
    fn a_series_within_ten_percent_after_warm_up_is_flat_and_warm_up_is_ignored() {
        // Start-up growth (1 → 9) falls inside the 20 s warm-up and must not count.
        let points = series(&[1.0, 9.0, 10.0, 10.5, 10.9, 10.2, 10.6]);
        let s = summarize("rss_kib", &points, 20.0, 0.10, Judge::Flat).unwrap();
        assert_eq!(s.samples, 5);
        assert_eq!((s.min, s.max, s.last), (10.0, 10.9, 10.6));
        assert!((s.spread - 0.09).abs() < 1e-9, "{}", s.spread);
        assert_eq!(s.flat, Some(true));
    }

    #[test]
    fn a_steady_climb_is_not_flat_and_shows_as_a_trend() {
        // +1 % per sample: 12 samples span 11 %, and the slope is 6 % of the mean per minute.
        let values: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i)).collect();
        let s = summarize("fds", &series(&values), 0.0, 0.10, Judge::Flat).unwrap();
        assert_eq!(s.flat, Some(false));
        assert!((s.spread - 0.11).abs() < 1e-9);
        let per_10min = 60.0 / 105.5;
        assert!((s.trend_per_10min - per_10min).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn zeros_constants_and_empty_windows() {
        let zeros = summarize("x", &series(&[0.0, 0.0]), 0.0, 0.1, Judge::Flat).unwrap();
        assert_eq!((zeros.spread, zeros.flat), (0.0, Some(true)));
        let left_zero = summarize("x", &series(&[0.0, 3.0]), 0.0, 0.1, Judge::Flat).unwrap();
        assert_eq!(left_zero.flat, Some(false));
        let reported = summarize("x", &series(&[1.0, 5.0]), 0.0, 0.1, Judge::Report).unwrap();
        assert_eq!(reported.flat, None);
        assert!(summarize("x", &series(&[1.0, 2.0]), 100.0, 0.1, Judge::Flat).is_none());
        let nan = summarize("x", &[(0.0, f64::NAN), (10.0, 4.0)], 0.0, 0.1, Judge::Flat);
        assert_eq!(nan.map(|s| s.samples), Some(1));
    }
}
