//! `pgpu`: the driver.

fn main() {}
