//! `pgpu-array`: the pgpu driver with the `arr` frontend (and its
//! kernel-census backend) and the `pgpu-fuse-spawns` pass registered at
//! build time instead of loaded with `--load-plugin`. Everything else is
//! `pgpu`'s own: `pgpu-array run prog.arr`, `pgpu-array compile --target
//! cuda --passes=pgpu-fuse-spawns prog.arr -o prog`, ...

fn main() -> std::process::ExitCode {
    let mut registry = pgpu::Registry::default();
    pgpu_array_frontend::register(&mut registry);
    registry.add_passes(pgpu_fuse_spawns::register_passes);
    pgpu::main_with(registry)
}
