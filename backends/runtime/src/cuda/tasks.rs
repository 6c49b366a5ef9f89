//! Tasks on the CUDA device: the runtime side of `pgpu.taskgroup` and
//! `pgpu.task` (Fork's sibling subgroups), whose lowering calls
//! `pgpu_rt_tasks_begin`, then `pgpu_rt_task_begin` / `pgpu_rt_task_end`
//! around each task's host code, then `pgpu_rt_tasks_end`.
//!
//! The host code stays sequential; what runs concurrently is the device
//! work of the tasks. Every launch, copy and synchronization of the runtime
//! goes to the host thread's *current stream* ([`current`]): the runtime
//! stream, or inside a task the task's own stream. So a task's
//! synchronization (a host read of a subgroup's size) waits for its own
//! work only, not for a sibling's long kernel queued before it.
//!
//! * `tasks_begin` opens a frame on the current stream;
//! * `task_begin` takes a stream that no open task uses and that has no
//!   work left (else a new one, up to [`MAX_STREAMS`], created in batches:
//!   [`grow_pool`]; past that the least recently used, which only costs
//!   concurrency), makes it wait for the
//!   work queued so far on the frame's stream (an event recorded there now:
//!   the taskgroup's code before a task, such as the compaction that makes
//!   its subgroup, is part of what it waits for) and makes it current;
//! * `task_end` records the task's end event and makes the frame's stream
//!   current again;
//! * `tasks_end` closes the frame: the frame's stream must wait for every
//!   task's end event (on the device: the host does not wait), which it
//!   does lazily, when it is next used (a launch, copy, synchronization or
//!   fork: [`current`]). A task's end event goes up with the joins still
//!   pending on its stream, so a stream whose work is done never waits for
//!   its descendants and is free for the next task at once (joined
//!   eagerly, every ancestor stream of a running leaf stayed busy).
//!
//! Device memory released while any frame is open is kept from reuse until
//! the outermost frame closes ([`crate::mirror::set_deferring`],
//! [`crate::mgpu::set_deferring`]): handed to another stream at once, a
//! block could be written while the releasing stream's kernels still read
//! it. And device memory allocated while a frame is open comes from the
//! stream-ordered allocator (`cuMemAllocAsync` on the current stream,
//! [`Runtime::alloc_device`]): `cuMemAlloc` between two streams' commands
//! keeps them from running concurrently (CUDA's implicit synchronization
//! rules), which made every subgroup wait for its siblings' kernels.
//!
//! Frames nest (a task's own taskgroup forks from the task's stream). On
//! the cpu device the calls do nothing: tasks run in program order.

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most streams the tasks create.
pub const MAX_STREAMS: usize = 256;

/// How many streams the first taskgroup creates; the pool doubles when a
/// task finds none idle (up to [`MAX_STREAMS`]).
pub const FIRST_STREAMS: usize = 64;

thread_local! {
    /// The stream of the task this thread runs, or the stream of the
    /// frame a task ended in (null until a task begins: the runtime stream).
    static CURRENT: Cell<CUstream> = const { Cell::new(std::ptr::null_mut()) };
}

/// The thread's current stream on `runtime`, after the joins pending on
/// it (see [`tasks_end`]).
pub fn current(runtime: &Runtime) -> CUstream {
    let stream = raw_current(runtime);
    apply_pending(runtime, stream);
    stream
}

fn raw_current(runtime: &Runtime) -> CUstream {
    let stream = CURRENT.with(Cell::get);
    if stream.is_null() {
        runtime.stream
    } else {
        stream
    }
}

/// Makes `stream` wait for the end events pending on it. The driver's
/// codes are not checked here: a wait on a recorded event only fails with
/// a sticky context error, which the call that uses the stream next
/// reports.
fn apply_pending(runtime: &Runtime, stream: CUstream) {
    if !ANY_PENDING.load(Ordering::Acquire) {
        return;
    }
    let events = {
        let mut guard = TASKS.lock().unwrap_or_else(|poison| poison.into_inner());
        let Some(tasks) = guard.as_mut() else {
            return;
        };
        let events = tasks.pending.remove(&(stream as usize)).unwrap_or_default();
        ANY_PENDING.store(!tasks.pending.is_empty(), Ordering::Release);
        events
    };
    for event in events {
        // SAFETY: recorded end events, each waited for and destroyed once.
        unsafe {
            (runtime.driver.cuStreamWaitEvent)(stream, event, 0);
            (runtime.driver.cuEventDestroy_v2)(event);
        }
    }
}

struct Frame {
    /// The stream current when the frame opened.
    parent: CUstream,
    /// End events of the frame's finished tasks.
    ends: Vec<CUevent>,
    /// Streams of the frame's tasks (finished or running).
    streams: Vec<CUstream>,
}

#[derive(Default)]
struct Tasks {
    frames: Vec<Frame>,
    /// End events of joined tasks that a stream must wait for before its
    /// next use, by stream.
    pending: std::collections::HashMap<usize, Vec<CUevent>>,
    /// The streams created for tasks that no open frame uses, least
    /// recently handed out first.
    pool: Vec<CUstream>,
    /// How many streams the tasks created.
    created: usize,
}

// SAFETY: driver handles are process-wide, usable from any thread.
unsafe impl Send for Tasks {}

static TASKS: Mutex<Option<Tasks>> = Mutex::new(None);

/// Whether a frame is open.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether some stream has pending joins.
static ANY_PENDING: AtomicBool = AtomicBool::new(false);

/// Whether tasks may be running on streams of their own.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

fn with_tasks<T>(body: impl FnOnce(&mut Tasks) -> Result<T, RtError>) -> Result<T, RtError> {
    let mut guard = TASKS.lock().unwrap_or_else(|poison| poison.into_inner());
    body(guard.get_or_insert_with(Tasks::default))
}

fn event(runtime: &Runtime, stream: CUstream) -> Result<CUevent, RtError> {
    let event = runtime.create_event(CU_EVENT_DISABLE_TIMING)?;
    // SAFETY: the event just created; a stream of the runtime or the pool.
    unsafe { runtime.record_event(event, stream)? };
    Ok(event)
}

fn wait(runtime: &Runtime, stream: CUstream, event: CUevent) -> Result<(), RtError> {
    // SAFETY: a recorded event; the wait is queued before it is destroyed
    // (destroying an event with queued waits is allowed).
    unsafe {
        let code = (runtime.driver.cuStreamWaitEvent)(stream, event, 0);
        runtime.check("cuStreamWaitEvent", code)?;
        let code = (runtime.driver.cuEventDestroy_v2)(event);
        runtime.check("cuEventDestroy_v2", code)
    }
}

/// Opens a frame on the current stream.
pub fn tasks_begin(runtime: &Runtime) -> Result<(), RtError> {
    let parent = current(runtime);
    let outermost = with_tasks(|tasks| {
        if tasks.created == 0 {
            grow_pool(runtime, tasks, FIRST_STREAMS)?;
        }
        tasks.frames.push(Frame {
            parent,
            ends: Vec::new(),
            streams: Vec::new(),
        });
        Ok(tasks.frames.len() == 1)
    })?;
    if outermost {
        ACTIVE.store(true, Ordering::Relaxed);
        crate::mirror::set_deferring(true);
        crate::mgpu::set_deferring(true);
    }
    Ok(())
}

/// A stream for a new task: see the module header.
fn take_stream(runtime: &Runtime, tasks: &mut Tasks) -> Result<CUstream, RtError> {
    let open: Vec<CUstream> = tasks
        .frames
        .iter()
        .flat_map(|frame| frame.streams.iter().copied().chain([frame.parent]))
        .collect();
    let mut idle = None;
    let mut fallback = None;
    for (index, &stream) in tasks.pool.iter().enumerate() {
        if open.contains(&stream) {
            continue;
        }
        // SAFETY: a stream of the pool.
        let code = unsafe { (runtime.driver.cuStreamQuery)(stream) };
        if code == CUDA_SUCCESS {
            idle = Some(index);
            break;
        }
        if code != CUDA_ERROR_NOT_READY {
            runtime.check_wait("cuStreamQuery", code, false)?;
        }
        fallback.get_or_insert(index);
    }
    if let Some(index) = idle {
        return Ok(tasks.pool.remove(index));
    }
    match fallback {
        Some(index) if tasks.created >= MAX_STREAMS => Ok(tasks.pool.remove(index)),
        _ => {
            // Doubling up to MAX_STREAMS; past it one at a time, only when
            // open frames hold every stream.
            let more = match MAX_STREAMS.checked_sub(tasks.created) {
                Some(left) if left > 0 => tasks.created.clamp(1, left),
                _ => 1,
            };
            grow_pool(runtime, tasks, more)?;
            Ok(tasks.pool.pop().expect("a stream just created"))
        }
    }
}

/// Creates `count` more streams at the pool's end. In batches:
/// `cuStreamCreate` waits for the kernels running on the device (seen on
/// the H200: a quicksort spent 17 of its 21 s in it while a leaf's kernel
/// ran), so streams are made ahead, while few kernels run, not one per task.
fn grow_pool(runtime: &Runtime, tasks: &mut Tasks, count: usize) -> Result<(), RtError> {
    for _ in 0..count {
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let code = crate::profile::host_call("stream-create", || unsafe {
            (runtime.driver.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING)
        });
        runtime.check("cuStreamCreate", code)?;
        tasks.pool.push(stream);
        tasks.created += 1;
        crate::profile::stream_created();
    }
    Ok(())
}

/// Starts a task of the innermost frame on a stream of its own.
pub fn task_begin(runtime: &Runtime) -> Result<(), RtError> {
    let (stream, parent) = with_tasks(|tasks| {
        let stream = take_stream(runtime, tasks)?;
        crate::profile::task_started();
        let frame = tasks
            .frames
            .last_mut()
            .ok_or_else(|| RtError::Internal("pgpu_rt_task_begin outside a taskgroup".into()))?;
        frame.streams.push(stream);
        Ok((stream, frame.parent))
    })?;
    apply_pending(runtime, parent);
    let fork = event(runtime, parent)?;
    wait(runtime, stream, fork)?;
    CURRENT.with(|current| current.set(stream));
    Ok(())
}

/// Ends the innermost frame's running task. The joins still pending on
/// its stream (its own taskgroups') go with its end event to the frame.
pub fn task_end(runtime: &Runtime) -> Result<(), RtError> {
    let stream = raw_current(runtime);
    let end = event(runtime, stream)?;
    let parent = with_tasks(|tasks| {
        let inner = tasks.pending.remove(&(stream as usize)).unwrap_or_default();
        let frame = tasks
            .frames
            .last_mut()
            .ok_or_else(|| RtError::Internal("pgpu_rt_task_end outside a taskgroup".into()))?;
        frame.ends.push(end);
        frame.ends.extend(inner);
        Ok(frame.parent)
    })?;
    CURRENT.with(|current| current.set(parent));
    Ok(())
}

/// Closes the innermost frame: its stream joins its tasks when next used
/// (the runtime argument keeps the signature of the other steps).
pub fn tasks_end(_runtime: &Runtime) -> Result<(), RtError> {
    let (frame, outermost) = with_tasks(|tasks| {
        let mut frame = tasks
            .frames
            .pop()
            .ok_or_else(|| RtError::Internal("pgpu_rt_tasks_end without a taskgroup".into()))?;
        tasks.pool.extend(frame.streams.iter().copied());
        let ends = std::mem::take(&mut frame.ends);
        if !ends.is_empty() {
            tasks
                .pending
                .entry(frame.parent as usize)
                .or_default()
                .extend(ends);
            ANY_PENDING.store(true, Ordering::Release);
        }
        Ok((frame, tasks.frames.is_empty()))
    })?;
    CURRENT.with(|current| current.set(frame.parent));
    if outermost {
        ACTIVE.store(false, Ordering::Relaxed);
        crate::mirror::set_deferring(false);
        crate::mgpu::set_deferring(false);
    }
    Ok(())
}
