//! `fuse-spawns-opt`: pgpu-opt with `pgpu-fuse-spawns` built in, the
//! build-time way in for passes. Every flag of `pgpu-opt` works, and the
//! pass is a flag (`--pgpu-fuse-spawns`) and a pipeline element like ours.

fn main() -> std::process::ExitCode {
    let mut registry = pgpu_opt::Registry::default();
    registry.add_passes(pgpu_fuse_spawns::register_passes);
    pgpu_opt::main_with(registry)
}
