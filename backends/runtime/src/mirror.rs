//! Host/device mirrors: the coherence of lists between host memory and the
//! CUDA device.
//!
//! Generated host code keeps every list (memref) in host memory allocated
//! by the runtime ([`crate::memory`]: `pgpu_rt_alloc`, `pgpu_rt_dtempnew`,
//! `_mlir_memref_to_llvm_alloc`). Every such block is recorded here, by its
//! host address and length, when it is allocated, and removed when it is
//! freed ([`register`], [`release`]); that is what lets a pointer anywhere
//! inside a block (a memref view's aligned pointer) find its block: the
//! table is a `BTreeMap` keyed by base address, and the block containing
//! `p` is the last one whose base is at most `p` (a pointer one past the
//! end still belongs to it: blocks are separated by their 64-byte
//! headers, so that is never another block's base).
//!
//! On the cuda device a block gets a device mirror of the same length the
//! first time a kernel needs it, and two valid bits say which copies hold
//! the current contents (at least one always does):
//!
//! * `pgpu_rt_to_device(p, write)` before a launch: allocates the mirror if
//!   there is none, copies host -> device if the device copy is stale (the
//!   copy is queued on the runtime stream, ordered before the kernel),
//!   marks the host copy stale when the kernel may write (`write != 0`),
//!   and returns the device address at `p`'s offset. Null gives null; a
//!   pointer outside every runtime block is an error.
//! * `pgpu_rt_to_host(p, write)` before host code reads (or, with
//!   `write`, writes) a list: if the host copy is stale, waits for the
//!   stream and copies device -> host; `write` marks the device copy
//!   stale. It is called often, so a read when no block has a stale host
//!   copy returns after one atomic load, without the lock (writes are
//!   hoisted out of host loops by the compiler and take the lock); on the
//!   cpu device it does nothing.
//! * A new block is fresh: its contents are undefined until written, so
//!   its first `pgpu_rt_to_device` copies nothing (a kernel that writes a
//!   temporary list does not upload the host's garbage), nor does its
//!   first `pgpu_rt_to_host`.
//! * The program's global arrays (static memory) are blocks too:
//!   `pgpu_rt_register_global(p, bytes)` at start-up records each one with
//!   its host copy valid (the initializer), never freed;
//!   `pgpu_rt_register_zero_global(p, bytes)` one without initializer,
//!   whose first device copy is a memset (no upload of zeros) unless the
//!   host wrote it before; even then, only the pages the host touched are
//!   copied, and the rest zeroed ([`crate::pages`]).
//! * Freeing a block keeps its mirror's device memory in a cache by length
//!   for the next block of that length (temporaries come back at every
//!   call; `cuMemFree` would also wait for the device); the cache is
//!   emptied when a device allocation fails.
//!
//! Copies move whole blocks, whatever the offset of `p`. On the cpu device
//! `pgpu_rt_to_device` returns `p` itself, so generated code can call both
//! functions unconditionally.
//!
//! The logic ([`Mirrors`]) is generic over a [`Backend`] that allocates
//! device memory and copies; the CUDA device is one backend
//! ([`crate::cuda::CudaBackend`]) and the unit tests use a fake one, so
//! the coherence rules are tested without a GPU. One lock guards the
//! table; copies happen under it, so concurrent calls see whole
//! transitions. It is a read-write lock: a launch whose blocks need no
//! change (their device copies valid; for a write, the host copies
//! already stale) only reads it, so task threads' launches share it.

use crate::error::{RtError, guard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Device memory and copies for [`Mirrors`].
pub trait Backend {
    /// `bytes` (> 0) bytes of device memory.
    fn alloc(&mut self, bytes: usize) -> Result<u64, RtError>;
    /// Frees memory of [`Backend::alloc`].
    fn free(&mut self, device: u64) -> Result<(), RtError>;
    /// Copies host -> device, ordered after earlier work and before later
    /// launches; the host bytes may change once it returns.
    fn upload(&mut self, device: u64, host: *const u8, bytes: usize) -> Result<(), RtError>;
    /// Waits for all earlier work, then copies device -> host.
    fn download(&mut self, host: *mut u8, device: u64, bytes: usize) -> Result<(), RtError>;
    /// Fills `bytes` bytes of device memory with zeros, ordered like
    /// [`Backend::upload`] (by default, as an upload of zeros).
    fn zero(&mut self, device: u64, bytes: usize) -> Result<(), RtError> {
        let zeros = vec![0u8; bytes];
        self.upload(device, zeros.as_ptr(), bytes)
    }
}

/// One runtime block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    len: usize,
    device: Option<u64>,
    host_valid: bool,
    device_valid: bool,
    /// Nothing has written the block yet: neither copy needs copying.
    fresh: bool,
    /// The host copy is all zeros (a global array without initializer
    /// that nothing wrote yet): the device copy is made by a memset, not
    /// an upload.
    zero: bool,
    /// Static memory without initializer: pages the process never
    /// touched read as zeros, and uploads skip them ([`crate::pages`]).
    sparse: bool,
}

impl Block {
    /// A block of `len` bytes valid on the host only, without a mirror yet.
    fn on_host(len: usize, fresh: bool) -> Block {
        Block {
            len,
            device: None,
            host_valid: true,
            device_valid: false,
            fresh,
            zero: false,
            sparse: false,
        }
    }
}

/// Freed device memory by length, for the next allocation of that length
/// (temporaries come back at every call; `cuMemFree` would also wait for
/// the device): the mirrors' cache and the `mgpuMemAlloc` scratch's
/// ([`crate::mgpu`]).
///
/// While tasks may run on streams of their own ([`crate::cuda::tasks`]),
/// memory put back is *deferred*: kept from reuse until the tasks have
/// joined ([`DeviceCache::set_deferring`]), since a block handed to another
/// stream could be written while the releasing stream's kernels still use
/// it.
#[derive(Debug, Default)]
pub struct DeviceCache {
    free: BTreeMap<usize, Vec<u64>>,
    deferred: Vec<(usize, u64)>,
    deferring: bool,
}

impl DeviceCache {
    pub const fn new() -> DeviceCache {
        DeviceCache {
            free: BTreeMap::new(),
            deferred: Vec::new(),
            deferring: false,
        }
    }

    /// Puts back `device` memory of `len` bytes.
    pub fn put(&mut self, len: usize, device: u64) {
        if self.deferring {
            self.deferred.push((len, device));
        } else {
            self.free.entry(len).or_default().push(device);
        }
    }

    /// Reusable memory of `len` bytes, if any.
    pub fn take(&mut self, len: usize) -> Option<u64> {
        self.free.get_mut(&len).and_then(Vec::pop)
    }

    /// Whether nothing is reusable.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }

    /// Removes and returns the reusable memory (to free it).
    pub fn drain(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.free)
            .into_values()
            .flatten()
            .collect()
    }

    /// Starts or ends deferring; ending makes the deferred memory
    /// reusable.
    pub fn set_deferring(&mut self, on: bool) {
        self.deferring = on;
        if !on {
            for (len, device) in std::mem::take(&mut self.deferred) {
                self.free.entry(len).or_default().push(device);
            }
        }
    }
}

/// The table of runtime blocks and their mirrors.
#[derive(Debug, Default)]
pub struct Mirrors {
    blocks: BTreeMap<usize, Block>,
    /// Device memory of released blocks.
    cache: DeviceCache,
    /// Blocks whose host copy is stale.
    stale_host: usize,
    /// Blocks whose device copy is valid.
    valid_device: usize,
}

/// The state of the block containing an address, for tests and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub base: usize,
    pub len: usize,
    pub device: Option<u64>,
    pub host_valid: bool,
    pub device_valid: bool,
}

impl Mirrors {
    pub const fn new() -> Mirrors {
        Mirrors {
            blocks: BTreeMap::new(),
            cache: DeviceCache::new(),
            stale_host: 0,
            valid_device: 0,
        }
    }

    /// Records a fresh block of `len` bytes at `base` (counted as valid on
    /// the host; its contents are undefined until written).
    pub fn register(&mut self, base: usize, len: usize) {
        if let Some(old) = self.blocks.insert(base, Block::on_host(len, true)) {
            // A block the allocator handed out again without a release:
            // forget the old one's state (its mirror leaks).
            self.forget(&old);
        }
    }

    /// Records the program's static memory of `len` bytes at `base` (a
    /// global array of the generated code, registered once at start-up):
    /// its host copy holds the initial contents, so the first launch
    /// uploads it, or, when it is `zero` (all zeros), fills the mirror
    /// with zeros on the device. Registering a block again changes nothing.
    pub fn register_static(&mut self, base: usize, len: usize, zero: bool) {
        if len == 0 || self.blocks.contains_key(&base) {
            return;
        }
        let block = Block {
            zero,
            sparse: zero,
            ..Block::on_host(len, false)
        };
        self.blocks.insert(base, block);
    }

    fn forget(&mut self, block: &Block) {
        if !block.host_valid {
            self.stale_host -= 1;
        }
        if block.device_valid {
            self.valid_device -= 1;
        }
    }

    /// Removes the block at `base`; its mirror, if any, goes to the cache
    /// of device memory. An unknown base is ignored.
    pub fn unregister(&mut self, base: usize) {
        let Some(block) = self.blocks.remove(&base) else {
            return;
        };
        self.forget(&block);
        if let Some(device) = block.device {
            crate::profile::given_back(block.len);
            self.cache.put(block.len, device);
        }
    }

    /// See [`DeviceCache::set_deferring`].
    pub fn set_deferring(&mut self, on: bool) {
        self.cache.set_deferring(on);
    }

    /// Frees the cached device memory.
    pub fn trim(&mut self, backend: &mut dyn Backend) -> Result<(), RtError> {
        for device in self.cache.drain() {
            backend.free(device)?;
        }
        Ok(())
    }

    /// Device memory for a block of `len` bytes: cached, or new (after
    /// freeing the cache when the device is full).
    fn device_memory(&mut self, backend: &mut dyn Backend, len: usize) -> Result<u64, RtError> {
        crate::profile::taken(len);
        if let Some(device) = self.cache.take(len) {
            return Ok(device);
        }
        match backend.alloc(len.max(1)) {
            Ok(device) => Ok(device),
            Err(_) if !self.cache.is_empty() => {
                self.trim(backend)?;
                backend.alloc(len.max(1))
            }
            Err(error) => Err(error),
        }
    }

    /// Reusable device memory of `len` bytes from the cache, if any.
    pub fn take_cached(&mut self, len: usize) -> Option<u64> {
        self.cache.take(len)
    }

    /// Makes `device` (memory of at least `len` bytes, cached or allocated
    /// outside the table's lock) the mirror of the block at `base`, if it
    /// still has none; else the memory goes to the cache.
    pub fn provide(&mut self, base: usize, len: usize, device: u64) {
        match self.blocks.get_mut(&base) {
            Some(block) if block.device.is_none() && block.len == len => {
                crate::profile::taken(len);
                block.device = Some(device);
            }
            _ => self.cache.put(len, device),
        }
    }

    /// The base of the block containing `addr`.
    fn find(&self, addr: usize) -> Option<usize> {
        let (&base, block) = self.blocks.range(..=addr).next_back()?;
        (addr - base <= block.len).then_some(base)
    }

    /// The state of the block containing `addr`.
    pub fn state(&self, addr: usize) -> Option<State> {
        let base = self.find(addr)?;
        let block = self.blocks.get(&base)?;
        Some(State {
            base,
            len: block.len,
            device: block.device,
            host_valid: block.host_valid,
            device_valid: block.device_valid,
        })
    }

    pub fn stale_host(&self) -> usize {
        self.stale_host
    }

    pub fn valid_device(&self) -> usize {
        self.valid_device
    }

    fn unknown(op: &'static str, addr: usize) -> RtError {
        RtError::Device(format!(
            "{op}: address {addr:#x} is not inside a list allocated by the runtime"
        ))
    }

    /// The device address of `addr` when [`Mirrors::to_device`] would
    /// change nothing: the device copy is valid and, for a `write`, the
    /// host copy already stale.
    pub fn unchanged_device_address(&self, addr: usize, write: bool) -> Option<u64> {
        let base = self.find(addr)?;
        let block = self.blocks.get(&base)?;
        let unchanged =
            block.device_valid && !block.fresh && !(write && (block.host_valid || block.zero));
        let device = block.device.filter(|_| unchanged)?;
        Some(device + (addr - base) as u64)
    }

    /// Makes the device copy of the block containing `addr` valid (marking
    /// the host copy stale if `write`); the device address of `addr`.
    pub fn to_device(
        &mut self,
        backend: &mut dyn Backend,
        addr: usize,
        write: bool,
    ) -> Result<u64, RtError> {
        let base = self
            .find(addr)
            .ok_or_else(|| Self::unknown("pgpu_rt_to_device", addr))?;
        let mut block = self.blocks[&base];
        let device = match block.device {
            Some(device) => device,
            None => {
                let device = self.device_memory(backend, block.len)?;
                block.device = Some(device);
                // Recorded at once, so that an error below still frees it.
                if let Some(entry) = self.blocks.get_mut(&base) {
                    entry.device = Some(device);
                }
                device
            }
        };
        if !block.device_valid {
            if block.len > 0 && !block.fresh {
                if block.zero {
                    backend.zero(device, block.len)?;
                } else if block.sparse {
                    upload_touched(backend, device, base, block.len)?;
                } else {
                    backend.upload(device, base as *const u8, block.len)?;
                }
            }
            block.device_valid = true;
            self.valid_device += 1;
        }
        block.zero &= !write;
        if write && block.host_valid {
            block.host_valid = false;
            self.stale_host += 1;
        }
        block.fresh = false;
        self.blocks.insert(base, block);
        Ok(device + (addr - base) as u64)
    }

    /// Makes the host copy of the block containing `addr` valid (marking
    /// the device copy stale if `write`).
    pub fn to_host(
        &mut self,
        backend: &mut dyn Backend,
        addr: usize,
        write: bool,
    ) -> Result<(), RtError> {
        let base = self
            .find(addr)
            .ok_or_else(|| Self::unknown("pgpu_rt_to_host", addr))?;
        let mut block = self.blocks[&base];
        if !block.host_valid {
            if let Some(device) = block.device.filter(|_| block.len > 0) {
                backend.download(base as *mut u8, device, block.len)?;
            }
            block.host_valid = true;
            self.stale_host -= 1;
        }
        if write && block.device_valid {
            block.device_valid = false;
            self.valid_device -= 1;
        }
        block.zero &= !write;
        block.fresh = false;
        self.blocks.insert(base, block);
        Ok(())
    }
}

// ------------------------------------------------------------ the process's table

static TABLE: RwLock<Mirrors> = RwLock::new(Mirrors::new());
/// Copies of the table's counters, read without the lock.
static STALE_HOST: AtomicUsize = AtomicUsize::new(0);
static VALID_DEVICE: AtomicUsize = AtomicUsize::new(0);

/// The table, locked; the counters are published when the guard drops.
struct Table(RwLockWriteGuard<'static, Mirrors>);

impl std::ops::Deref for Table {
    type Target = Mirrors;
    fn deref(&self) -> &Mirrors {
        &self.0
    }
}

impl std::ops::DerefMut for Table {
    fn deref_mut(&mut self) -> &mut Mirrors {
        &mut self.0
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        STALE_HOST.store(self.0.stale_host, Ordering::Release);
        VALID_DEVICE.store(self.0.valid_device, Ordering::Release);
    }
}

fn table() -> Table {
    Table(TABLE.write().unwrap_or_else(|poison| poison.into_inner()))
}

/// The table, for reading only: launches whose blocks change no state
/// (the common case: every launch checks every list it uses) share it.
fn table_to_read() -> RwLockReadGuard<'static, Mirrors> {
    TABLE.read().unwrap_or_else(|poison| poison.into_inner())
}

/// Records a block of the runtime's allocator.
pub fn register(ptr: *mut u8, len: usize) {
    table().register(ptr as usize, len);
}

/// Uploads the pages of the static block at `base` that the process has
/// touched, and zeroes the rest of its mirror at `device`.
fn upload_touched(
    backend: &mut dyn Backend,
    device: u64,
    base: usize,
    len: usize,
) -> Result<(), RtError> {
    // SAFETY: a static block is mapped memory of the program.
    match unsafe { crate::pages::touched_runs(base, len) } {
        Some(runs) if !(runs.len() == 1 && runs[0] == (base..base + len)) => {
            backend.zero(device, len)?;
            for run in runs {
                let offset = (run.start - base) as u64;
                backend.upload(device + offset, run.start as *const u8, run.len())?;
            }
            Ok(())
        }
        _ => backend.upload(device, base as *const u8, len),
    }
}

/// Records a global array of the program (see [`Mirrors::register_static`]).
pub fn register_static(ptr: *mut u8, len: usize, zero: bool) {
    table().register_static(ptr as usize, len, zero);
}

/// Forgets a block about to be freed; its mirror's memory is kept for the
/// next block of the same length.
pub fn release(ptr: *mut u8) -> Result<(), RtError> {
    table().unregister(ptr as usize);
    Ok(())
}

/// See [`Mirrors::set_deferring`].
pub fn set_deferring(on: bool) {
    table().set_deferring(on);
}

/// The state of the block containing `ptr` in the process's table.
pub fn state(ptr: *const u8) -> Option<State> {
    table_to_read().state(ptr as usize)
}

/// `pgpu_rt_to_device`: the device address of `ptr`, its block's device
/// copy made valid; `ptr` itself on the cpu device.
pub fn to_device(ptr: *mut u8, write: bool) -> Result<*mut u8, RtError> {
    if ptr.is_null() || !crate::device::is_cuda()? {
        return Ok(ptr);
    }
    let runtime = crate::cuda::runtime()?;
    if let Some(device) = table_to_read().unchanged_device_address(ptr as usize, write) {
        return Ok(device as usize as *mut u8);
    }
    let mut backend = crate::cuda::CudaBackend(runtime);
    // A block's first mirror is allocated outside the table's lock (a
    // driver call, which task threads' launches slow down), unless the
    // cache has one; an allocation that fails is retried under the lock,
    // which empties the cache first.
    let missing = state(ptr)
        .filter(|state| state.device.is_none())
        .map(|state| (state.base, state.len));
    if let Some((base, len)) = missing {
        let cached = table().take_cached(len);
        let memory = cached.or_else(|| backend.alloc(len.max(1)).ok());
        if let Some(memory) = memory {
            table().provide(base, len, memory);
        }
    }
    let device = table().to_device(&mut backend, ptr as usize, write)?;
    Ok(device as usize as *mut u8)
}

/// `pgpu_rt_to_host`: the host copy of `ptr`'s block made valid.
pub fn to_host(ptr: *mut u8, write: bool) -> Result<(), RtError> {
    // The fast path for reads: nothing is stale on the host (the counter
    // is zero on the cpu device). A write always records itself: it may
    // end a block's freshness, which the next launch must see.
    if !write && STALE_HOST.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    // Nothing to do on the cpu device; while the device is still being
    // chosen (in the background: see `crate::device`), a host write before
    // the first launch (a program filling its input) only updates the
    // table, without waiting for the choice: only kernels on the cuda
    // device make a host copy stale.
    if ptr.is_null() || crate::device::chosen() == Some(crate::device::Device::Cpu) {
        return Ok(());
    }
    // A download waits for the current stream's work: wait before taking
    // the table's lock, so that task threads ([`crate::cuda::tasks`]) keep
    // using the table meanwhile; the copy then finds the stream idle.
    if state(ptr).is_some_and(|state| !state.host_valid) {
        crate::cuda::runtime()?.wait_before_download()?;
    }
    // The device only when a copy needs it.
    table().to_host(&mut StartedOnUse(None), ptr as usize, write)
}

/// The CUDA backend, the device started (or its start-up waited for) on
/// the first copy.
struct StartedOnUse(Option<crate::cuda::CudaBackend>);

impl StartedOnUse {
    fn backend(&mut self) -> Result<&mut crate::cuda::CudaBackend, RtError> {
        if self.0.is_none() {
            self.0 = Some(crate::cuda::CudaBackend(crate::cuda::runtime()?));
        }
        Ok(self.0.as_mut().expect("set above"))
    }
}

impl Backend for StartedOnUse {
    fn alloc(&mut self, bytes: usize) -> Result<u64, RtError> {
        self.backend()?.alloc(bytes)
    }
    fn free(&mut self, device: u64) -> Result<(), RtError> {
        self.backend()?.free(device)
    }
    fn upload(&mut self, device: u64, host: *const u8, bytes: usize) -> Result<(), RtError> {
        self.backend()?.upload(device, host, bytes)
    }
    fn download(&mut self, host: *mut u8, device: u64, bytes: usize) -> Result<(), RtError> {
        self.backend()?.download(host, device, bytes)
    }
    fn zero(&mut self, device: u64, bytes: usize) -> Result<(), RtError> {
        self.backend()?.zero(device, bytes)
    }
}

/// The device address of `ptr` (any address inside a runtime allocation)
/// with its block's device copy valid; `write != 0` marks the host copy
/// stale. Null gives null; on the cpu device, `ptr`.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_to_device(ptr: *mut u8, write: i32) -> *mut u8 {
    guard(|| crate::profile::host_call("to-device", || to_device(ptr, write != 0)))
}

/// Makes the host copy of `ptr`'s block valid (waiting for the device if it
/// is stale); `write != 0` marks the device copy stale. Nothing on the cpu
/// device.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_to_host(ptr: *mut u8, write: i32) {
    guard(|| to_host(ptr, write != 0))
}

/// Records the program's global array of `bytes` bytes at `ptr` (static
/// memory, not the runtime allocator's), so that kernels can use it on the
/// cuda device; generated code registers every global array once, at
/// start-up. Its current contents are the host's.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_register_global(ptr: *mut u8, bytes: i64) {
    if !ptr.is_null()
        && let Ok(len) = usize::try_from(bytes)
    {
        register_static(ptr, len, false);
    }
}

/// As `pgpu_rt_register_global` for a global array whose initial contents
/// are all zeros (no initializer): its first device copy is a memset
/// instead of an upload, unless the host wrote it before.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_register_zero_global(ptr: *mut u8, bytes: i64) {
    if !ptr.is_null()
        && let Ok(len) = usize::try_from(bytes)
    {
        register_static(ptr, len, true);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Device memory in host vectors, with a log of the calls.
    #[derive(Default)]
    struct Fake {
        memory: HashMap<u64, Vec<u8>>,
        next: u64,
        log: Vec<String>,
        fail_alloc: bool,
    }

    impl Fake {
        fn new() -> Fake {
            Fake {
                next: 0x7000_0000,
                ..Fake::default()
            }
        }
        fn bytes(&mut self, device: u64) -> &mut Vec<u8> {
            let base = *self.memory.keys().filter(|&&b| b <= device).max().unwrap();
            self.memory.get_mut(&base).unwrap()
        }
    }

    impl Backend for Fake {
        fn alloc(&mut self, bytes: usize) -> Result<u64, RtError> {
            if self.fail_alloc {
                return Err(RtError::OutOfMemory {
                    bytes: bytes as i64,
                });
            }
            let device = self.next;
            self.next += 0x1_0000;
            self.memory.insert(device, vec![0xee; bytes]);
            self.log.push(format!("alloc {bytes}"));
            Ok(device)
        }
        fn free(&mut self, device: u64) -> Result<(), RtError> {
            self.memory.remove(&device).unwrap();
            self.log.push("free".into());
            Ok(())
        }
        fn upload(&mut self, device: u64, host: *const u8, bytes: usize) -> Result<(), RtError> {
            // SAFETY: the test's host buffers.
            let src = unsafe { std::slice::from_raw_parts(host, bytes) };
            let base = *self.memory.keys().filter(|&&b| b <= device).max().unwrap();
            let at = (device - base) as usize;
            self.bytes(device)[at..at + bytes].copy_from_slice(src);
            self.log.push(format!("up {bytes}"));
            Ok(())
        }
        fn download(&mut self, host: *mut u8, device: u64, bytes: usize) -> Result<(), RtError> {
            // SAFETY: the test's host buffers.
            let dst = unsafe { std::slice::from_raw_parts_mut(host, bytes) };
            dst.copy_from_slice(&self.memory[&device][..bytes]);
            self.log.push(format!("down {bytes}"));
            Ok(())
        }
        fn zero(&mut self, device: u64, bytes: usize) -> Result<(), RtError> {
            self.memory.get_mut(&device).unwrap()[..bytes].fill(0);
            self.log.push(format!("zero {bytes}"));
            Ok(())
        }
    }

    fn log(fake: &mut Fake) -> String {
        std::mem::take(&mut fake.log).join(", ")
    }

    #[test]
    fn memory_released_inside_tasks_waits_for_their_join() {
        let mut first = vec![0u8; 16];
        let mut second = vec![0u8; 16];
        let (a, b) = (first.as_mut_ptr() as usize, second.as_mut_ptr() as usize);
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        mirrors.register(a, 16);
        let da = mirrors.to_device(&mut fake, a, true).unwrap();
        mirrors.set_deferring(true);
        mirrors.unregister(a);
        // Another block of the same length, inside the tasks: new memory,
        // not the released block's (a sibling's kernels may still use it).
        mirrors.register(b, 16);
        let db = mirrors.to_device(&mut fake, b, true).unwrap();
        assert_ne!(db, da);
        assert_eq!(log(&mut fake), "alloc 16, alloc 16");
        mirrors.unregister(b);
        // After the join both are reusable.
        mirrors.set_deferring(false);
        mirrors.register(a, 16);
        let again = mirrors.to_device(&mut fake, a, true).unwrap();
        assert!(again == da || again == db);
        assert_eq!(log(&mut fake), "");
    }

    #[test]
    fn copies_follow_the_valid_bits() {
        let mut host = vec![1u8, 2, 3, 4, 5, 6, 7, 8];
        let base = host.as_mut_ptr() as usize;
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        mirrors.register(base, host.len());
        // The host fills the list.
        mirrors.to_host(&mut fake, base, true).unwrap();
        assert_eq!(log(&mut fake), "");

        // First use: allocate and upload; a read leaves the host valid.
        let d = mirrors.to_device(&mut fake, base, false).unwrap();
        assert_eq!(log(&mut fake), "alloc 8, up 8");
        assert_eq!(fake.memory[&d], host);
        // Valid on both sides: nothing to do either way.
        assert_eq!(mirrors.to_device(&mut fake, base + 4, false), Ok(d + 4));
        mirrors.to_host(&mut fake, base, false).unwrap();
        assert_eq!(log(&mut fake), "");
        assert_eq!(mirrors.stale_host(), 0);

        // A kernel writes: the host copy is stale until to_host.
        let d2 = mirrors.to_device(&mut fake, base + 2, true).unwrap();
        assert_eq!(d2, d + 2);
        assert_eq!(log(&mut fake), "");
        assert_eq!(mirrors.stale_host(), 1);
        fake.bytes(d2)[2] = 42;
        mirrors.to_host(&mut fake, base + 7, false).unwrap();
        assert_eq!(log(&mut fake), "down 8");
        assert_eq!(host[2], 42);
        assert_eq!(mirrors.stale_host(), 0);

        // The host writes: the next launch uploads again.
        mirrors.to_host(&mut fake, base, true).unwrap();
        assert_eq!(mirrors.valid_device(), 0);
        host[0] = 9;
        mirrors.to_device(&mut fake, base, false).unwrap();
        assert_eq!(log(&mut fake), "up 8");
        assert_eq!(fake.memory[&d][0], 9);

        // Freeing keeps the mirror's memory for the next block of 8 bytes.
        mirrors.unregister(base);
        assert_eq!(mirrors.valid_device(), 0);
        mirrors.unregister(base);
        let mut other = vec![0u8; 8];
        let other_base = other.as_mut_ptr() as usize;
        mirrors.register(other_base, 8);
        assert_eq!(mirrors.to_device(&mut fake, other_base, true), Ok(d));
        assert_eq!(log(&mut fake), "");
        mirrors.unregister(other_base);
        mirrors.trim(&mut fake).unwrap();
        assert_eq!(log(&mut fake), "free");
    }

    #[test]
    fn static_blocks_upload_their_initial_contents() {
        let mut global = vec![3u8, 1, 4, 1];
        let base = global.as_mut_ptr() as usize;
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        mirrors.register_static(base, global.len(), false);
        // Registering again (and an empty array) changes nothing.
        mirrors.register_static(base, global.len(), true);
        mirrors.register_static(base + 100, 0, false);
        assert_eq!(mirrors.state(base + 100).map(|s| s.base), None);
        // Its initializer is on the host: the first launch uploads it.
        let d = mirrors.to_device(&mut fake, base + 1, true).unwrap();
        assert_eq!(log(&mut fake), "alloc 4, up 4");
        assert_eq!(fake.memory[&(d - 1)], global);
        fake.bytes(d)[1] = 9;
        mirrors.to_host(&mut fake, base, false).unwrap();
        assert_eq!(log(&mut fake), "down 4");
        assert_eq!(global, vec![3, 9, 4, 1]);
    }

    #[test]
    fn zero_static_blocks_upload_only_the_pages_the_host_touched() {
        let page = 4096;
        // Fresh zero pages, as a global without initializer has.
        let mut fresh = crate::pages::fresh::FreshPages::new(64 * page);
        let base = fresh.base as usize;
        let global = fresh.bytes_mut();
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        mirrors.register_static(base, global.len(), true);
        mirrors.to_host(&mut fake, base, true).unwrap();
        global[20 * page + 5] = 7;
        let d = mirrors.to_device(&mut fake, base, false).unwrap();
        let uploaded: usize = std::mem::take(&mut fake.log)
            .iter()
            .filter_map(|entry| entry.strip_prefix("up "))
            .map(|bytes| bytes.parse::<usize>().unwrap())
            .sum();
        // SAFETY: the mapping's own bytes.
        if unsafe { crate::pages::touched_runs(base, global.len()) }.is_some() {
            assert!(uploaded <= 2 * page, "uploaded {uploaded} bytes");
        } else {
            assert_eq!(uploaded, global.len());
        }
        assert_eq!(fake.memory[&d], global);
    }

    #[test]
    fn zero_static_blocks_are_zeroed_on_the_device_until_written() {
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        let mut zeros = [vec![0u8; 8], vec![0u8; 8], vec![0u8; 8]];
        let [a, b, c] = zeros.each_mut().map(|block| block.as_mut_ptr() as usize);
        for base in [a, b, c] {
            mirrors.register_static(base, 8, true);
        }
        // Untouched: a memset, no upload.
        let d = mirrors.to_device(&mut fake, a, false).unwrap();
        assert_eq!(log(&mut fake), "alloc 8, zero 8");
        assert_eq!(fake.memory[&d], vec![0; 8]);
        // Written by the host first: uploaded.
        mirrors.to_host(&mut fake, b, true).unwrap();
        zeros[1][3] = 5;
        let d = mirrors.to_device(&mut fake, b, false).unwrap();
        assert_eq!(log(&mut fake), "alloc 8, up 8");
        assert_eq!(fake.memory[&d][3], 5);
        // Written by a kernel, then again stale on the device after a host
        // write: the host's contents go up, not zeros.
        let d = mirrors.to_device(&mut fake, c, true).unwrap();
        fake.bytes(d)[0] = 7;
        mirrors.to_host(&mut fake, c, true).unwrap();
        assert_eq!(zeros[2][0], 7);
        mirrors.to_device(&mut fake, c, false).unwrap();
        assert_eq!(log(&mut fake), "alloc 8, zero 8, down 8, up 8");
    }

    #[test]
    fn unchanged_device_addresses_need_no_transition() {
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        let mut host = vec![1u8; 8];
        let base = host.as_mut_ptr() as usize;
        mirrors.register_static(base, 8, false);
        // No mirror yet, then a valid device copy with the host's valid:
        // a read changes nothing, a write would make the host stale.
        assert_eq!(mirrors.unchanged_device_address(base, false), None);
        let d = mirrors.to_device(&mut fake, base, false).unwrap();
        assert_eq!(
            mirrors.unchanged_device_address(base + 3, false),
            Some(d + 3)
        );
        assert_eq!(mirrors.unchanged_device_address(base, true), None);
        mirrors.to_device(&mut fake, base, true).unwrap();
        assert_eq!(mirrors.unchanged_device_address(base, true), Some(d));
        // A host write makes the device copy stale.
        mirrors.to_host(&mut fake, base, true).unwrap();
        assert_eq!(mirrors.unchanged_device_address(base, false), None);
    }

    #[test]
    fn memory_provided_outside_the_lock_becomes_the_mirror() {
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        let mut host = vec![1u8; 8];
        let base = host.as_mut_ptr() as usize;
        mirrors.register(base, 8);
        let memory = fake.alloc(8).unwrap();
        mirrors.provide(base, 8, memory);
        assert_eq!(mirrors.to_device(&mut fake, base, true).unwrap(), memory);
        // A block that has a mirror by then: the memory goes to the cache,
        // whence the next block of that length takes it.
        let spare = fake.alloc(8).unwrap();
        mirrors.provide(base, 8, spare);
        assert_eq!(mirrors.state(base).unwrap().device, Some(memory));
        assert_eq!(mirrors.take_cached(8), Some(spare));
        assert_eq!(log(&mut fake), "alloc 8, alloc 8");
    }

    #[test]
    fn fresh_blocks_copy_nothing() {
        let mut host = vec![7u8; 8];
        let base = host.as_mut_ptr() as usize;
        let mut fake = Fake::new();
        let mut mirrors = Mirrors::new();
        mirrors.register(base, host.len());
        // A kernel writes a new temporary: no upload of undefined bytes.
        let d = mirrors.to_device(&mut fake, base, true).unwrap();
        assert_eq!(log(&mut fake), "alloc 8");
        fake.bytes(d)[0] = 1;
        // Then the host reads it: downloaded.
        mirrors.to_host(&mut fake, base, false).unwrap();
        assert_eq!(log(&mut fake), "down 8");
        assert_eq!(host[0], 1);
        // A new block the host reads first: nothing to download.
        let mut second = vec![0u8; 4];
        let second_base = second.as_mut_ptr() as usize;
        mirrors.register(second_base, 4);
        mirrors.to_host(&mut fake, second_base, false).unwrap();
        assert_eq!(log(&mut fake), "");
        // ... and once the host has it, a launch uploads it.
        mirrors.to_device(&mut fake, second_base, false).unwrap();
        assert_eq!(log(&mut fake), "alloc 4, up 4");
    }

    #[test]
    fn addresses_find_their_block() {
        let mut mirrors = Mirrors::new();
        mirrors.register(1000, 100);
        mirrors.register(1200, 0);
        mirrors.register(1300, 50);
        assert_eq!(mirrors.state(1000).unwrap().base, 1000);
        assert_eq!(mirrors.state(1099).unwrap().base, 1000);
        // One past the end still belongs to the block.
        assert_eq!(mirrors.state(1100).unwrap().base, 1000);
        assert_eq!(mirrors.state(1101), None);
        assert_eq!(mirrors.state(999), None);
        assert_eq!(mirrors.state(1200).unwrap().len, 0);
        assert_eq!(mirrors.state(1201), None);
        assert_eq!(mirrors.state(1349).unwrap().base, 1300);
        let mut fake = Fake::new();
        let error = mirrors.to_device(&mut fake, 1150, false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "pgpu_rt_to_device: address 0x47e is not inside a list allocated by the runtime"
        );
        assert!(mirrors.to_host(&mut fake, 5, false).is_err());
    }

    #[test]
    fn empty_blocks_get_a_mirror_without_copies() {
        let mut mirrors = Mirrors::new();
        mirrors.register(4096, 0);
        let mut fake = Fake::new();
        mirrors.to_device(&mut fake, 4096, true).unwrap();
        assert_eq!(log(&mut fake), "alloc 1");
        mirrors.to_host(&mut fake, 4096, false).unwrap();
        assert_eq!(log(&mut fake), "");
        mirrors.unregister(4096);
    }

    #[test]
    fn errors_leave_the_table_consistent() {
        let mut host = [0u8; 16];
        let base = host.as_mut_ptr() as usize;
        let mut mirrors = Mirrors::new();
        mirrors.register(base, 16);
        let mut fake = Fake::new();
        fake.fail_alloc = true;
        assert!(mirrors.to_device(&mut fake, base, true).is_err());
        let state = mirrors.state(base).unwrap();
        assert!(state.host_valid && !state.device_valid && state.device.is_none());
        assert_eq!(mirrors.stale_host(), 0);
    }

    #[test]
    fn reregistering_a_base_resets_its_state() {
        let mut host = [0u8; 4];
        let base = host.as_mut_ptr() as usize;
        let mut mirrors = Mirrors::new();
        let mut fake = Fake::new();
        mirrors.register(base, 4);
        mirrors.to_device(&mut fake, base, true).unwrap();
        assert_eq!((mirrors.stale_host(), mirrors.valid_device()), (1, 1));
        mirrors.register(base, 4);
        assert_eq!((mirrors.stale_host(), mirrors.valid_device()), (0, 0));
    }

    #[test]
    fn the_process_table_tracks_runtime_blocks() {
        // This test binary runs on the cpu device (no GPU here, or the
        // fallback): to_device is the identity and to_host does nothing.
        let block = crate::memory::alloc(256).unwrap();
        let state = state(block).unwrap();
        assert_eq!((state.base, state.len), (block as usize, 256));
        assert!(self::state(block.wrapping_add(256)).is_some());
        if !crate::device::is_cuda().unwrap() {
            assert_eq!(
                pgpu_rt_to_device(block.wrapping_add(8), 1),
                block.wrapping_add(8)
            );
            pgpu_rt_to_host(block, 1);
        }
        assert!(pgpu_rt_to_device(std::ptr::null_mut(), 0).is_null());
        // SAFETY: a block of `alloc`.
        unsafe { crate::memory::free(block).unwrap() };
    }
}
