//! The Petri-net performance model of seeds/petri-net-gpu-model.txt
//! (Gogolińska, Mikulski, Piątkowski, PNSE'17), as a library.
//!
//! * [`net`]: bounded inhibitor place/transition nets (places, transitions,
//!   weighted and inhibitor arcs, markings);
//! * [`simulate`]: maximal concurrent step semantics with the paper's
//!   conflict resolution (a uniformly random permutation of the enabled
//!   transitions per step, from a seeded generator), run to the dead
//!   marking;
//! * [`text`]: the nets' text format (documented there), read with source
//!   spans and written back;
//! * [`dot`]: a net as Graphviz;
//! * [`gpu`]: the paper's model of one streaming multiprocessor: the SM
//!   place, the waiting transition t0 and one warp part (Fig. 2, Table 1)
//!   per warp, built from an instruction mix; and the kernel-level
//!   estimate (blocks over multiprocessors, rounds of resident warps);
//! * [`calibration`]: a steps-to-seconds scale per device, fitted to
//!   measured kernel times and kept in a small text file.
//!
//! The crate has no LLVM dependency: the instruction-mix analysis that
//! feeds it from pgpu IR lives in `pgpu-kernel-passes`.

pub mod calibration;
pub mod dot;
pub mod gpu;
pub mod net;
pub mod simulate;
pub mod text;

pub use gpu::{Device, KernelEstimate, Launch, LaunchCount, Mix, SmModel, WarmLaunches};
pub use net::{Net, NetError, PlaceId, TransitionId};
pub use simulate::{Outcome, SimulateError, Simulation, StepLimit};
