//! Which kernel an asynchronous CUDA error belongs to.
//!
//! Generated host code calls `pgpu_rt_launch_site(kernel, file, line, col)`
//! right before each launch; the launch takes that [`Site`] (or, without
//! one, the kernel's name and an unknown location). A launch that the
//! driver refuses is reported at its own site. A kernel that faults while
//! it runs (an illegal address, a trap) is only seen at a later call,
//! usually a synchronization, so [`Outstanding`] keeps the sites of the
//! launches since the last successful synchronization: the report names
//! the newest of them (the usual culprit: launches on the one runtime
//! stream run in order, and the error stops the stream) and adds a note
//! line for each earlier one still outstanding (at most [`NOTES`], then a
//! count), since the driver does not say which kernel faulted.
//!
//! Only the newest [`KEPT`] sites are kept; a host loop launching millions
//! of kernels without synchronizing costs no memory. Reports have the
//! format of [`crate::launch::kernel_error_message`].

use crate::launch::kernel_error_message;
use std::collections::VecDeque;

/// Sites kept of the launches since the last synchronization.
pub const KEPT: usize = 16;
/// Note lines of earlier launches in one report.
pub const NOTES: usize = 3;

/// Where a kernel was launched in the source program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub kernel: String,
    pub file: String,
    pub line: i32,
    pub col: i32,
}

impl Site {
    /// A launch of `kernel` with no recorded source location.
    pub fn unknown(kernel: &str) -> Site {
        Site {
            kernel: kernel.into(),
            file: "<unknown>".into(),
            line: 0,
            col: 0,
        }
    }

    /// The report of an error `message` in this launch.
    pub fn report(&self, message: &str) -> String {
        kernel_error_message(&self.kernel, &self.file, self.line, self.col, message)
    }
}

/// The launches since the last successful synchronization.
#[derive(Debug, Default)]
pub struct Outstanding {
    recent: VecDeque<Site>,
    total: u64,
}

impl Outstanding {
    pub const fn new() -> Outstanding {
        Outstanding {
            recent: VecDeque::new(),
            total: 0,
        }
    }

    /// Records a launch that the driver accepted.
    pub fn launched(&mut self, site: Site) {
        if self.recent.len() == KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(site);
        self.total += 1;
    }

    /// Every launch so far has completed.
    pub fn synchronized(&mut self) {
        self.recent.clear();
        self.total = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The report of an asynchronous error `message`, naming the newest
    /// outstanding launch; None when no launch is outstanding.
    pub fn report(&self, message: &str) -> Option<String> {
        let newest = self.recent.back()?;
        let mut report = newest.report(message);
        let earlier = self.total - 1;
        for site in self.recent.iter().rev().skip(1).take(NOTES) {
            report.push_str(&format!(
                "\n{}:{}:{}: note: kernel {} was launched earlier and not yet waited for",
                site.file, site.line, site.col, site.kernel
            ));
        }
        let noted = (self.recent.len() - 1).min(NOTES) as u64;
        if earlier > noted {
            report.push_str(&format!(
                "\nnote: and {} more earlier launches not yet waited for",
                earlier - noted
            ));
        }
        Some(report)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn site(kernel: &str, line: i32) -> Site {
        Site {
            kernel: kernel.into(),
            file: "prog.bsgp".into(),
            line,
            col: 5,
        }
    }

    #[test]
    fn a_single_launch_is_named() {
        let mut outstanding = Outstanding::new();
        assert_eq!(outstanding.report("x"), None);
        outstanding.launched(site("boom", 3));
        assert_eq!(
            outstanding.report("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"),
            Some(
                "prog.bsgp:3:5: error: in kernel boom: CUDA_ERROR_LAUNCH_FAILED: \
                 unspecified launch failure"
                    .into()
            )
        );
        outstanding.synchronized();
        assert!(outstanding.is_empty());
        assert_eq!(outstanding.report("x"), None);
    }

    #[test]
    fn earlier_launches_are_noted_and_counted() {
        let mut outstanding = Outstanding::new();
        for line in 1..=20 {
            outstanding.launched(site(&format!("k{line}"), line));
        }
        let report = outstanding.report("E").unwrap();
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines[0], "prog.bsgp:20:5: error: in kernel k20: E");
        assert_eq!(
            lines[1],
            "prog.bsgp:19:5: note: kernel k19 was launched earlier and not yet waited for"
        );
        assert!(lines[3].contains("kernel k17"));
        assert_eq!(
            lines[4],
            "note: and 16 more earlier launches not yet waited for"
        );
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn unknown_sites_still_name_the_kernel() {
        assert_eq!(
            Site::unknown("scale").report("m"),
            "<unknown>:0:0: error: in kernel scale: m"
        );
    }
}
