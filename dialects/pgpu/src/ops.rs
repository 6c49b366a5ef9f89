//! Typed builders and accessors for every `pgpu` operation, generated from
//! `include/pgpu/PgpuOps.td` by melior's `dialect!` macro.

melior::dialect! {
    name: "pgpu",
    files: ["pgpu/PgpuOps.td"],
    include_directory_env_vars: ["PGPU_DIALECT_TD_DIR"],
}
