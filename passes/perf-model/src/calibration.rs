//! A steps-to-seconds scale per device, fitted to measured kernel times,
//! and the latencies the steps were predicted with.
//!
//! The model counts steps of one multiprocessor; a device turns them into
//! time at some rate, plus a fixed cost per launch. [`Calibration::fit`]
//! takes pairs (predicted steps, measured seconds) of kernels measured on
//! one device and fits `seconds = seconds_per_step * steps +
//! launch_seconds` by least squares (through the origin when the free fit
//! gives a negative intercept or slope). It also reports how well the
//! steps rank the measured times (Spearman's rank correlation), the
//! figure the model is judged by. The latencies l1 and l2 are the
//! device's too: the steps, and so the scale, depend on them, and the one
//! that ranks a device's kernels best is chosen by predicting them at
//! several (`bench/perf-model/sweep.sh`); the file records them, and the
//! tools predict with them unless told otherwise.
//!
//! The file is a few `key = value` lines (`#` starts a comment):
//!
//! A third latency, `warm_global_latency`, is l1 for the launches of a
//! kernel after its first (the "warm launches" of `gpu.rs`); a file that
//! records it turns that deviation on.
//!
//! ```text
//! device = NVIDIA H200
//! seconds_per_step = 1.5e-9
//! launch_seconds = 3.2e-6
//! samples = 41
//! spearman = 0.93
//! global_latency = 400
//! shared_latency = 2
//! warm_global_latency = 100
//! ```

use std::fmt::Write;

/// A fitted scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub device: String,
    pub seconds_per_step: f64,
    pub launch_seconds: f64,
    /// Measurements fitted.
    pub samples: usize,
    /// Spearman's rank correlation of steps and seconds over them.
    pub spearman: f64,
    /// l1 and l2 of the steps fitted, when recorded.
    pub global_latency: Option<u64>,
    pub shared_latency: Option<u64>,
    /// l1 of a kernel's warm launches, when recorded.
    pub warm_global_latency: Option<u64>,
}

/// A bad calibration file or measurement set.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("the calibration has no '{0}'")]
    Missing(&'static str),
    #[error("a fit needs at least 2 measurements with different step counts; got {0}")]
    TooFew(usize),
    #[error("measurement {0} is not a finite, non-negative number of seconds and steps")]
    BadMeasurement(usize),
}

impl Calibration {
    /// Fits `measurements` (predicted steps, measured seconds) of `device`.
    pub fn fit(device: &str, measurements: &[(f64, f64)]) -> Result<Self, CalibrationError> {
        for (index, &(steps, seconds)) in measurements.iter().enumerate() {
            if !(steps.is_finite() && seconds.is_finite() && steps >= 0.0 && seconds >= 0.0) {
                return Err(CalibrationError::BadMeasurement(index + 1));
            }
        }
        let count = measurements.len() as f64;
        let mean_steps = measurements.iter().map(|m| m.0).sum::<f64>() / count;
        let mean_seconds = measurements.iter().map(|m| m.1).sum::<f64>() / count;
        let spread: f64 = measurements
            .iter()
            .map(|m| (m.0 - mean_steps).powi(2))
            .sum();
        if measurements.len() < 2 || spread == 0.0 {
            return Err(CalibrationError::TooFew(measurements.len()));
        }
        let covariance: f64 = measurements
            .iter()
            .map(|m| (m.0 - mean_steps) * (m.1 - mean_seconds))
            .sum();
        let mut slope = covariance / spread;
        let mut intercept = mean_seconds - slope * mean_steps;
        if slope <= 0.0 || intercept < 0.0 {
            let squares: f64 = measurements.iter().map(|m| m.0 * m.0).sum();
            slope = measurements.iter().map(|m| m.0 * m.1).sum::<f64>() / squares;
            intercept = 0.0;
        }
        Ok(Self {
            device: device.to_string(),
            seconds_per_step: slope,
            launch_seconds: intercept,
            samples: measurements.len(),
            spearman: spearman(measurements),
            global_latency: None,
            shared_latency: None,
            warm_global_latency: None,
        })
    }

    /// The predicted seconds of a kernel of `steps` steps.
    pub fn seconds(&self, steps: u64) -> f64 {
        self.launch_seconds + self.seconds_per_step * steps as f64
    }

    /// Reads the file format.
    pub fn parse(text: &str) -> Result<Self, CalibrationError> {
        let mut device = None;
        let mut per_step = None;
        let mut launch = None;
        let mut samples = 0;
        let mut rank = f64::NAN;
        let (mut global_latency, mut shared_latency, mut warm_global_latency) = (None, None, None);
        for (index, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let syntax = |message: String| CalibrationError::Syntax {
                line: index + 1,
                message,
            };
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| syntax("expected 'key = value'".to_string()))?;
            let (key, value) = (key.trim(), value.trim());
            let number = || {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| syntax(format!("'{key}' needs a non-negative number")))
            };
            match key {
                "device" => device = Some(value.to_string()),
                "seconds_per_step" => per_step = Some(number()?),
                "launch_seconds" => launch = Some(number()?),
                "samples" => samples = number()? as usize,
                "global_latency" | "shared_latency" | "warm_global_latency" => {
                    let latency = value
                        .parse::<u64>()
                        .map_err(|_| syntax(format!("'{key}' needs a whole number of steps")))?;
                    *match key {
                        "global_latency" => &mut global_latency,
                        "shared_latency" => &mut shared_latency,
                        _ => &mut warm_global_latency,
                    } = Some(latency);
                }
                "spearman" => {
                    rank = value
                        .parse()
                        .map_err(|_| syntax("'spearman' needs a number".to_string()))?
                }
                other => return Err(syntax(format!("unknown key '{other}'"))),
            }
        }
        Ok(Self {
            device: device.ok_or(CalibrationError::Missing("device"))?,
            seconds_per_step: per_step.ok_or(CalibrationError::Missing("seconds_per_step"))?,
            launch_seconds: launch.unwrap_or(0.0),
            samples,
            spearman: rank,
            global_latency,
            shared_latency,
            warm_global_latency,
        })
    }

    /// Writes the file format.
    pub fn print(&self) -> String {
        let mut text = String::from(
            "# pgpu perf-model calibration: seconds = seconds_per_step * steps + launch_seconds\n",
        );
        let _ = writeln!(text, "device = {}", self.device);
        let _ = writeln!(text, "seconds_per_step = {:e}", self.seconds_per_step);
        let _ = writeln!(text, "launch_seconds = {:e}", self.launch_seconds);
        let _ = writeln!(text, "samples = {}", self.samples);
        let _ = writeln!(text, "spearman = {:.4}", self.spearman);
        if let Some(latency) = self.global_latency {
            let _ = writeln!(text, "global_latency = {latency}");
        }
        if let Some(latency) = self.shared_latency {
            let _ = writeln!(text, "shared_latency = {latency}");
        }
        if let Some(latency) = self.warm_global_latency {
            let _ = writeln!(text, "warm_global_latency = {latency}");
        }
        text
    }
}

/// Spearman's rank correlation of the pairs (average ranks for ties).
pub fn spearman(pairs: &[(f64, f64)]) -> f64 {
    let first = ranks(pairs.iter().map(|p| p.0).collect());
    let second = ranks(pairs.iter().map(|p| p.1).collect());
    pearson(&first, &second)
}

fn ranks(values: Vec<f64>) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end - 1) as f64 / 2.0 + 1.0;
        for &index in &order[start..end] {
            ranks[index] = rank;
        }
        start = end;
    }
    ranks
}

fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let count = a.len() as f64;
    let (mean_a, mean_b) = (a.iter().sum::<f64>() / count, b.iter().sum::<f64>() / count);
    let covariance: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - mean_a) * (y - mean_b))
        .sum();
    let spread_a: f64 = a.iter().map(|x| (x - mean_a).powi(2)).sum();
    let spread_b: f64 = b.iter().map(|y| (y - mean_b).powi(2)).sum();
    covariance / (spread_a * spread_b).sqrt()
}
