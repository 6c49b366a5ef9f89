//! Checked memory: every allocation, every access, and the per-superstep
//! shadow map of the race detector.
//!
//! An allocation is a vector of [`Val`]s; elements start as `Uninit` (the
//! memory of `memref.alloc`, `alloca`, `pgpu.dnew`/`dtempnew`, and globals
//! without an initializer), so reading one before it was written is an
//! error. An access computes the linear element index from the view
//! (`offset + sum(index_i * stride_i)`) and checks it against the view's
//! sizes (for rank-1 views, C pointers that may index before their start,
//! only the upper bound) and against the allocation, which must still be
//! live.
//!
//! Race detection: while SPMD threads run, each accessed element records
//! its writer (thread and op location) and up to two distinct readers. A
//! write by another thread than the recorded writer, a write to an element
//! another thread read, or a read of an element another thread wrote in the
//! same superstep is a race. The map is cleared at every barrier. Host
//! code in `pgpu.require` runs before its superstep: its accesses are
//! checked against the threads' accesses of that superstep so far (which a
//! compiled program would not have made yet) but not recorded.
//!
//! A block spawn has no supersteps: its range barriers order only the
//! threads of a range. There the detector works with happens-before
//! ([`Clocks`], set by module `block`): every thread has a vector clock, a
//! released range joins its members' clocks, and each accessed element
//! records its last write and the reads since it with the accessing
//! thread's epoch. An access races with an earlier one of another thread
//! unless a chain of range barriers orders the two (write after read, read
//! after write, write after write).

use crate::value::{MemDesc, Val};
use std::collections::HashMap;

/// Where an allocation came from (for messages and for freeing rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    Heap,
    Stack,
    Global,
    Device,
    DeviceTemp,
    Workgroup,
}

#[derive(Debug)]
pub struct Allocation {
    pub data: Vec<Val>,
    pub len: usize,
    pub live: bool,
    pub kind: AllocKind,
}

/// An access failure; the caller attaches the op's location.
#[derive(Debug)]
pub enum AccessError {
    Message(String),
    Race {
        message: String,
        other_loc: u32,
        other_what: &'static str,
    },
}

impl From<String> for AccessError {
    fn from(message: String) -> Self {
        Self::Message(message)
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Shadow {
    writer: Option<(u32, u32)>,
    readers: [Option<(u32, u32)>; 2],
}

#[derive(Debug, Default)]
pub struct Memory {
    pub allocs: Vec<Allocation>,
    shadow: HashMap<(u32, usize), Shadow>,
    /// The current thread id while race detection is on.
    pub race_thread: Option<u32>,
    pub total_elements: usize,
    /// Writes of the current lock-step (PRAM) step, committed together.
    pub pending: Option<Vec<(u32, usize, Val)>>,
    /// Happens-before race detection (block spawns) instead of the
    /// per-superstep shadow map.
    pub clocks: Option<Clocks>,
}

/// One recorded access of the happens-before detector.
#[derive(Debug, Clone, Copy)]
struct Access {
    thread: u32,
    /// The thread's epoch at the access.
    epoch: u32,
    loc: u32,
}

/// The accesses of one element the next access must be ordered after.
#[derive(Debug, Default)]
struct Accesses {
    writer: Option<Access>,
    /// Reads since the last write that are not ordered before a later read
    /// (at most one per thread).
    readers: Vec<Access>,
}

/// Vector clocks of the threads of a block spawn and the accesses of its
/// run: the race detector of ranges that synchronize independently.
#[derive(Debug, Default)]
pub struct Clocks {
    /// `clocks[t][u]`: the newest epoch of thread `u` that thread `t` is
    /// ordered after; `clocks[t][t]` is `t`'s own epoch (from 1; a range
    /// barrier starts a new one).
    clocks: Vec<Vec<u32>>,
    shadow: HashMap<(u32, usize), Accesses>,
}

impl Clocks {
    /// `threads` threads that no barrier has ordered yet.
    pub fn new(threads: usize) -> Self {
        let clocks = (0..threads)
            .map(|thread| {
                let mut clock = vec![0; threads];
                clock[thread] = 1;
                clock
            })
            .collect();
        Self {
            clocks,
            shadow: HashMap::new(),
        }
    }

    /// A barrier of the threads `members`: each of them is now ordered
    /// after everything any of them did before it, and starts a new epoch.
    pub fn synchronize(&mut self, members: std::ops::Range<usize>) {
        let first = members.start;
        let Some(clocks) = self.clocks.get_mut(members) else {
            return;
        };
        let mut joined = vec![0u32; clocks.first().map_or(0, Vec::len)];
        for clock in clocks.iter() {
            for (max, &value) in joined.iter_mut().zip(clock) {
                *max = (*max).max(value);
            }
        }
        for (offset, clock) in clocks.iter_mut().enumerate() {
            clock.copy_from_slice(&joined);
            if let Some(own) = clock.get_mut(first + offset) {
                *own += 1;
            }
        }
    }

    fn track(
        &mut self,
        alloc: u32,
        element: usize,
        write: bool,
        loc: u32,
        thread: u32,
    ) -> Result<(), AccessError> {
        let Some(clock) = self.clocks.get(thread as usize) else {
            return Ok(());
        };
        let ordered = |access: &Access| {
            access.thread == thread
                || clock
                    .get(access.thread as usize)
                    .is_some_and(|&seen| seen >= access.epoch)
        };
        let entry = self.shadow.entry((alloc, element)).or_default();
        let race = |what: &str, other: &Access, other_what: &'static str| AccessError::Race {
            message: format!(
                "data race: thread {thread} {} element {element} that thread {} {what}, and no range barrier orders the two accesses",
                if write { "writes" } else { "reads" },
                other.thread
            ),
            other_loc: other.loc,
            other_what,
        };
        if let Some(writer) = &entry.writer
            && !ordered(writer)
        {
            return Err(race("wrote", writer, "the other thread's write"));
        }
        let current = Access {
            thread,
            epoch: clock[thread as usize],
            loc,
        };
        if write {
            if let Some(reader) = entry.readers.iter().find(|reader| !ordered(reader)) {
                return Err(race("read", reader, "the other thread's read"));
            }
            // Later accesses ordered after this write are ordered after
            // everything it is ordered after.
            entry.writer = Some(current);
            entry.readers.clear();
        } else {
            // Reads ordered before this one are covered by it.
            entry.readers.retain(|reader| !ordered(reader));
            entry.readers.push(current);
        }
        Ok(())
    }
}

/// The race detector's id for host code inside `pgpu.require`.
pub const HOST_THREAD: u32 = u32::MAX;

/// Upper bound on the elements all live allocations may hold.
const MAX_ELEMENTS: usize = 1 << 30;

/// The synthetic address of allocation `id` is `(id + 1) << ADDRESS_SHIFT`:
/// 1 TiB apart, more than the bytes of any allocation ([`MAX_ELEMENTS`]
/// elements of at most 8 bytes), so the byte ranges of two allocations
/// never overlap.
const ADDRESS_SHIFT: u32 = 40;

impl Memory {
    pub fn allocate(
        &mut self,
        len: usize,
        kind: AllocKind,
        init: Option<Vec<Val>>,
    ) -> Result<u32, String> {
        if self.total_elements.saturating_add(len) > MAX_ELEMENTS {
            return Err(format!(
                "out of memory: cannot allocate {len} more elements"
            ));
        }
        self.total_elements += len;
        let data = init.unwrap_or_else(|| vec![Val::Uninit; len]);
        self.allocs.push(Allocation {
            data,
            len,
            live: true,
            kind,
        });
        Ok((self.allocs.len() - 1) as u32)
    }

    pub fn free(&mut self, id: u32, what: &str) -> Result<(), String> {
        let allocation = self
            .allocs
            .get_mut(id as usize)
            .ok_or_else(|| format!("{what} of an invalid pointer"))?;
        if !allocation.live {
            return Err(format!(
                "{what} of memory that was already freed (double free)"
            ));
        }
        allocation.live = false;
        self.total_elements -= allocation.len;
        allocation.data = Vec::new();
        Ok(())
    }

    /// The aligned pointer of allocation `id`
    /// (`memref.extract_aligned_pointer_as_index`): a synthetic base
    /// address, `(id + 1) << 40`, the same for every view of the
    /// allocation. Allocations are never moved and ids never reused, so
    /// `base + (offset + linear index) * element bytes` is a distinct
    /// integer per element of all allocations of the run (`None` past
    /// 2^23 - 1 allocations, where the addresses would leave `i64`).
    pub fn aligned_pointer(id: u32) -> Option<i64> {
        (i64::from(id) + 1).checked_mul(1 << ADDRESS_SHIFT)
    }

    /// The linear element index of `indices` in `desc`, checked.
    pub fn element(&self, desc: &MemDesc, indices: &[i64]) -> Result<usize, String> {
        if indices.len() != desc.sizes.len() {
            return Err(format!(
                "access with {} indices into a rank-{} memref",
                indices.len(),
                desc.sizes.len()
            ));
        }
        let mut linear = desc.offset;
        for (dim, (&index, (&size, &stride))) in indices
            .iter()
            .zip(desc.sizes.iter().zip(&desc.strides))
            .enumerate()
        {
            // Rank-1 views are C pointers: `p[-1]` is valid C, so only
            // their end bounds them (beyond the allocation's bounds).
            if index >= size || (desc.sizes.len() > 1 && index < 0) {
                return Err(format!(
                    "out-of-bounds access: index {index} of dimension {dim} is outside the view's size {size}"
                ));
            }
            linear = linear.wrapping_add(index.wrapping_mul(stride));
        }
        let allocation = self
            .allocs
            .get(desc.alloc as usize)
            .ok_or_else(|| "access through an invalid pointer".to_string())?;
        if !allocation.live {
            return Err(format!(
                "use after free: access to element {linear} of a freed {} allocation",
                kind_name(allocation.kind)
            ));
        }
        if linear < 0 || linear as usize >= allocation.len {
            return Err(format!(
                "out-of-bounds access: element {linear} of an allocation of {} elements (indices {indices:?})",
                allocation.len
            ));
        }
        Ok(linear as usize)
    }

    pub fn load(&mut self, desc: &MemDesc, indices: &[i64], loc: u32) -> Result<Val, AccessError> {
        let element = self.element(desc, indices)?;
        self.track(desc.alloc, element, false, loc)?;
        let value = &self.allocs[desc.alloc as usize].data[element];
        if matches!(value, Val::Uninit) {
            return Err(AccessError::Message(format!(
                "read of uninitialised memory: element {element} of a {} allocation (indices {indices:?})",
                kind_name(self.allocs[desc.alloc as usize].kind)
            )));
        }
        Ok(value.clone())
    }

    pub fn store(
        &mut self,
        desc: &MemDesc,
        indices: &[i64],
        value: Val,
        loc: u32,
    ) -> Result<(), AccessError> {
        let element = self.element(desc, indices)?;
        if let Some(pending) = &mut self.pending {
            pending.push((desc.alloc, element, value));
            return Ok(());
        }
        self.track(desc.alloc, element, true, loc)?;
        self.allocs[desc.alloc as usize].data[element] = value;
        Ok(())
    }

    /// Raw element access without race tracking (collectives, copies).
    pub fn get_raw(&self, alloc: u32, element: usize) -> Val {
        self.allocs[alloc as usize].data[element].clone()
    }

    pub fn set_raw(&mut self, alloc: u32, element: usize, value: Val) {
        self.allocs[alloc as usize].data[element] = value;
    }

    /// Commits the writes of a lock-step step: for concurrent writes to one
    /// element the lowest rank (the first write) wins (Priority CRCW).
    pub fn commit(&mut self) {
        if let Some(pending) = &mut self.pending {
            let writes = std::mem::take(pending);
            for (alloc, element, value) in writes.into_iter().rev() {
                if let Some(slot) = self
                    .allocs
                    .get_mut(alloc as usize)
                    .and_then(|a| a.data.get_mut(element))
                {
                    *slot = value;
                }
            }
        }
    }

    pub fn clear_shadow(&mut self) {
        self.shadow.clear();
    }

    fn track(
        &mut self,
        alloc: u32,
        element: usize,
        write: bool,
        loc: u32,
    ) -> Result<(), AccessError> {
        let Some(thread) = self.race_thread else {
            return Ok(());
        };
        if let Some(clocks) = &mut self.clocks {
            return clocks.track(alloc, element, write, loc, thread);
        }
        let host = thread == HOST_THREAD;
        let who = |id: u32| {
            if id == HOST_THREAD {
                "the host code of pgpu.require (which runs before the superstep)".to_string()
            } else {
                format!("thread {id}")
            }
        };
        // Host code checks against the threads' accesses but leaves no
        // trace: threads may use what it wrote.
        let entry = if host {
            match self.shadow.get_mut(&(alloc, element)) {
                Some(entry) => entry,
                None => return Ok(()),
            }
        } else {
            self.shadow.entry((alloc, element)).or_default()
        };
        if let Some((writer, writer_loc)) = entry.writer
            && writer != thread
        {
            return Err(AccessError::Race {
                message: format!(
                    "data race: {} {} element {element} that thread {writer} wrote in the same superstep",
                    who(thread),
                    if write { "writes" } else { "reads" }
                ),
                other_loc: writer_loc,
                other_what: "the other thread's write",
            });
        }
        if write {
            for (reader, reader_loc) in entry.readers.iter().flatten() {
                if *reader != thread {
                    return Err(AccessError::Race {
                        message: format!(
                            "data race: {} writes element {element} that thread {reader} read in the same superstep",
                            who(thread)
                        ),
                        other_loc: *reader_loc,
                        other_what: "the other thread's read",
                    });
                }
            }
            if !host {
                entry.writer = Some((thread, loc));
            }
        } else if !host {
            match entry.readers {
                [Some((a, _)), _] if a == thread => {}
                [Some(_), Some((b, _))] if b == thread => {}
                [None, _] => entry.readers[0] = Some((thread, loc)),
                [Some(_), None] => entry.readers[1] = Some((thread, loc)),
                _ => {}
            }
        }
        Ok(())
    }
}

pub fn kind_name(kind: AllocKind) -> &'static str {
    match kind {
        AllocKind::Heap => "heap (memref.alloc)",
        AllocKind::Stack => "stack (memref.alloca)",
        AllocKind::Global => "global",
        AllocKind::Device => "device (pgpu.dnew)",
        AllocKind::DeviceTemp => "temporary device (pgpu.dtempnew)",
        AllocKind::Workgroup => "gpu workgroup or private",
    }
}
