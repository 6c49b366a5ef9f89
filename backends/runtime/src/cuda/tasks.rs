//! Tasks on the CUDA device: the runtime side of `pgpu.taskgroup` and
//! `pgpu.task` (Fork's sibling subgroups). The lowering calls
//! `pgpu_rt_tasks_begin`, then for each task either
//! `pgpu_rt_task_spawn(body, context, bytes)` (a task whose host code
//! `pgpu-outline-tasks` moved into a function `body(context)`) or
//! `pgpu_rt_task_begin` / `pgpu_rt_task_end` around the task's host code
//! in place, then `pgpu_rt_tasks_end`.
//!
//! **Streams.** Every launch, copy and synchronization of the runtime goes
//! to the host thread's *current stream* ([`current`]): the runtime
//! stream, or inside a task the task's own stream. So a task's
//! synchronization (a host read of a subgroup's size) waits for its own
//! work only, not for a sibling's long kernel queued before it.
//!
//! **Threads.** A spawned task's host code runs on a thread of its own, so
//! that sibling subgroups issue their kernels concurrently instead of one
//! subtree after the other (in a recursive quicksort the host otherwise
//! walks the recursion depth first and waits for each group's split size
//! before it issues the next group: the device ran one kernel at a time).
//! The spawner keeps the last task of a taskgroup for itself (a spawn is
//! queued until the next task or the group's end, which then runs it
//! inline instead of idling at the join). A task goes to an idle task
//! thread, or to a new one while fewer than [`task_threads`] exist; else
//! it runs inline at once. No task ever waits in a queue for a thread, so
//! a task that waits for its own subtasks cannot deadlock the others.
//!
//! * `tasks_begin` opens a frame (per host thread) on the current stream;
//! * `task_spawn` / `task_begin` take a stream that no open frame uses
//!   and that has no work left (else a new one, up to [`MAX_STREAMS`],
//!   created in batches: `grow_pool`; past that the least recently used,
//!   which only costs concurrency) and make it wait for the work queued
//!   so far on the frame's stream (an event recorded there now: the
//!   taskgroup's code before a task, such as the compaction that makes its
//!   subgroup, is part of what it waits for); `task_spawn` copies the
//!   context (the caller's memory may change after it returns);
//! * `task_end` (and a spawned task's end) records the task's end event;
//!   the thread's current stream is the frame's again;
//! * `tasks_end` runs the queued task, waits until the frame's other
//!   tasks' host code has returned, and closes the frame: the frame's
//!   stream must wait for every task's end event (on the device: the host
//!   does not wait for the device), which it does lazily, when it is next
//!   used (a launch, copy, synchronization or fork: [`current`]). A task's
//!   end event goes up with the joins still pending on its stream, so a
//!   stream whose work is done never waits for its descendants and is free
//!   for the next task at once.
//!
//! Device memory released while any frame is open is kept from reuse until
//! the last frame closes ([`crate::mirror::set_deferring`],
//! [`crate::mgpu::set_deferring`]): handed to another stream at once, a
//! block could be written while the releasing stream's kernels still read
//! it. And device memory allocated while a frame is open comes from the
//! stream-ordered allocator (`cuMemAllocAsync` on the current stream,
//! [`Runtime::alloc_device`]): `cuMemAlloc` between two streams' commands
//! keeps them from running concurrently (CUDA's implicit synchronization
//! rules), which made every subgroup wait for its siblings' kernels.
//!
//! Frames nest (a task's own taskgroup forks from the task's stream, on
//! the task's thread). On the cpu device the calls do nothing and a
//! spawned task runs at once: tasks run in program order.

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, mpsc};

/// The most streams the tasks create.
pub const MAX_STREAMS: usize = 256;

/// How many streams the first taskgroup creates; the pool doubles when a
/// task finds none idle (up to [`MAX_STREAMS`]).
pub const FIRST_STREAMS: usize = 64;

/// The host code of a spawned task: `body(context)`.
pub type TaskBody = unsafe extern "C" fn(*mut u8);

/// The most task threads: `PGPU_TASK_THREADS` when set to a number (0:
/// every task runs on its spawner's thread, as before threads), else 16.
/// Task threads mostly wait for the device (a subgroup's split size), so
/// as many as cores pay (H200 host, 16 cores, quicksort of 10^7: a sort
/// of 275-285 ms with 16 threads, 296-312 ms with 32, 303-340 ms with 64,
/// 1033-1099 ms with none, at 4608 processors).
pub fn task_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("PGPU_TASK_THREADS")
            .ok()
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(16)
    })
}

thread_local! {
    /// The stream of the task this thread runs, or the stream of the
    /// frame a task ended in (null until a task begins: the runtime stream).
    static CURRENT: Cell<CUstream> = const { Cell::new(std::ptr::null_mut()) };
    /// The open frames of this thread, innermost last.
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
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
        let mut shared = shared();
        let events = shared
            .pending
            .remove(&(stream as usize))
            .unwrap_or_default();
        ANY_PENDING.store(!shared.pending.is_empty(), Ordering::Release);
        events
    };
    for event in events {
        // SAFETY: recorded end events, each waited for and destroyed once.
        unsafe {
            (runtime.driver.cuStreamWaitEvent)(stream, event as CUevent, 0);
            (runtime.driver.cuEventDestroy_v2)(event as CUevent);
        }
    }
}

/// A task spawned and not yet run: its body, a copy of its context, and
/// the stream it runs on.
struct Spawned {
    body: TaskBody,
    /// The context's bytes, 16-byte aligned like the struct it was.
    context: Vec<u128>,
    stream: usize,
}

/// A spawned task's end: its end events (with the joins pending on its
/// stream), once its host code has returned.
#[derive(Default)]
struct Completion {
    ends: Mutex<Option<Result<Vec<usize>, RtError>>>,
    done: Condvar,
}

impl Completion {
    fn finish(&self, ends: Result<Vec<usize>, RtError>) {
        *self
            .ends
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(ends);
        self.done.notify_all();
    }

    fn wait(&self) -> Result<Vec<usize>, RtError> {
        let mut ends = self
            .ends
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        loop {
            if let Some(ends) = ends.take() {
                return ends;
            }
            ends = self
                .done
                .wait(ends)
                .unwrap_or_else(|poison| poison.into_inner());
        }
    }
}

struct Frame {
    /// The stream current when the frame opened.
    parent: CUstream,
    /// End events of the frame's finished tasks (and their pending joins).
    ends: Vec<usize>,
    /// Streams of the frame's tasks (finished or running).
    streams: Vec<usize>,
    /// The last task spawned, not yet run.
    queued: Option<Spawned>,
    /// Tasks running (or run) on other threads.
    running: Vec<Arc<Completion>>,
}

/// What the host threads share: the stream pool and the pending joins.
struct Shared {
    /// End events of joined tasks that a stream must wait for before its
    /// next use, by stream.
    pending: BTreeMap<usize, Vec<usize>>,
    /// The streams created for tasks that no open frame uses, least
    /// recently handed out first.
    pool: Vec<usize>,
    /// How many streams the tasks created.
    created: usize,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    pending: BTreeMap::new(),
    pool: Vec::new(),
    created: 0,
});

fn shared() -> MutexGuard<'static, Shared> {
    SHARED.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Open frames of all threads: [`set_active`] while there are any.
static OPEN_FRAMES: Mutex<usize> = Mutex::new(0);
/// Whether a frame is open.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether some stream has pending joins.
static ANY_PENDING: AtomicBool = AtomicBool::new(false);

/// Whether tasks may be running on streams of their own.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

fn frame_opened() {
    let mut open = OPEN_FRAMES
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    if *open == 0 {
        set_active(true);
    }
    *open += 1;
}

fn frame_closed() {
    let mut open = OPEN_FRAMES
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    *open = open.saturating_sub(1);
    if *open == 0 {
        set_active(false);
    }
}

/// Whether a frame is open, and device memory released meanwhile kept
/// from reuse (see the module header).
fn set_active(on: bool) {
    ACTIVE.store(on, Ordering::Relaxed);
    crate::mirror::set_deferring(on);
    crate::mgpu::set_deferring(on);
}

/// Runs `body` on the thread's innermost frame.
fn with_frame<T>(
    step: &str,
    body: impl FnOnce(&mut Frame) -> Result<T, RtError>,
) -> Result<T, RtError> {
    FRAMES.with_borrow_mut(|frames| match frames.last_mut() {
        Some(frame) => body(frame),
        None => Err(RtError::Internal(format!(
            "pgpu_rt_{step} outside a taskgroup"
        ))),
    })
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
    {
        let mut shared = shared();
        if shared.created == 0 {
            grow_pool(runtime, &mut shared, FIRST_STREAMS)?;
        }
    }
    FRAMES.with_borrow_mut(|frames| {
        frames.push(Frame {
            parent,
            ends: Vec::new(),
            streams: Vec::new(),
            queued: None,
            running: Vec::new(),
        })
    });
    frame_opened();
    Ok(())
}

/// A stream for a new task: see the module header. Streams of open frames
/// are never in the pool (they return to it when their frame closes).
fn take_stream(runtime: &Runtime, shared: &mut Shared) -> Result<CUstream, RtError> {
    let mut idle = None;
    let mut fallback = None;
    for (index, &stream) in shared.pool.iter().enumerate() {
        // SAFETY: a stream of the pool.
        let code = unsafe { (runtime.driver.cuStreamQuery)(stream as CUstream) };
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
        return Ok(shared.pool.remove(index) as CUstream);
    }
    match fallback {
        Some(index) if shared.created >= MAX_STREAMS => Ok(shared.pool.remove(index) as CUstream),
        _ => {
            // Doubling up to MAX_STREAMS; past it one at a time, only when
            // open frames hold every stream.
            let more = match MAX_STREAMS.checked_sub(shared.created) {
                Some(left) if left > 0 => shared.created.clamp(1, left),
                _ => 1,
            };
            grow_pool(runtime, shared, more)?;
            Ok(shared.pool.pop().expect("a stream just created") as CUstream)
        }
    }
}

/// Creates `count` more streams at the pool's end. In batches:
/// `cuStreamCreate` waits for the kernels running on the device (seen on
/// the H200: a quicksort spent 17 of its 21 s in it while a leaf's kernel
/// ran), so streams are made ahead, while few kernels run, not one per task.
fn grow_pool(runtime: &Runtime, shared: &mut Shared, count: usize) -> Result<(), RtError> {
    for _ in 0..count {
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let code = crate::profile::host_call("stream-create", || unsafe {
            (runtime.driver.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING)
        });
        runtime.check("cuStreamCreate", code)?;
        shared.pool.push(stream as usize);
        shared.created += 1;
        crate::profile::stream_created();
    }
    Ok(())
}

/// A stream for a new task of the innermost frame, made to wait for the
/// work queued so far on the frame's stream.
fn fork(runtime: &Runtime, step: &str) -> Result<CUstream, RtError> {
    let stream = take_stream(runtime, &mut shared())?;
    let parent = with_frame(step, |frame| {
        frame.streams.push(stream as usize);
        Ok(frame.parent)
    })?;
    crate::profile::task_started();
    apply_pending(runtime, parent);
    let fork = event(runtime, parent)?;
    wait(runtime, stream, fork)?;
    Ok(stream)
}

/// Starts a task of the innermost frame on a stream of its own; its host
/// code follows on this thread.
pub fn task_begin(runtime: &Runtime) -> Result<(), RtError> {
    dispatch_queued(runtime)?;
    let stream = fork(runtime, "task_begin")?;
    CURRENT.with(|current| current.set(stream));
    Ok(())
}

/// Ends the innermost frame's running task. The joins still pending on
/// its stream (its own taskgroups') go with its end event to the frame.
pub fn task_end(runtime: &Runtime) -> Result<(), RtError> {
    let stream = raw_current(runtime);
    let ends = end_events(runtime, stream)?;
    let parent = with_frame("task_end", |frame| {
        frame.ends.extend(ends);
        Ok(frame.parent)
    })?;
    CURRENT.with(|current| current.set(parent));
    Ok(())
}

/// The end event of a task on `stream`, and the joins pending on it.
fn end_events(runtime: &Runtime, stream: CUstream) -> Result<Vec<usize>, RtError> {
    let end = event(runtime, stream)?;
    let mut ends = vec![end as usize];
    ends.extend(
        shared()
            .pending
            .remove(&(stream as usize))
            .unwrap_or_default(),
    );
    Ok(ends)
}

/// Spawns a task of the innermost frame: `body(copy of context)` on a
/// stream of its own, on another thread or inline (see the module
/// header).
///
/// # Safety
/// `body` is a task body that accepts a copy of `bytes` bytes of
/// `context`; `context` points to `bytes` readable bytes.
pub unsafe fn task_spawn(
    runtime: &Runtime,
    body: TaskBody,
    context: *const u8,
    bytes: usize,
) -> Result<(), RtError> {
    let stream = fork(runtime, "task_spawn")?;
    let mut copy = vec![0u128; bytes.div_ceil(16)];
    if bytes > 0 {
        // SAFETY: the caller's contract; the copy holds at least `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(context, copy.as_mut_ptr().cast(), bytes) };
    }
    let spawned = Spawned {
        body,
        context: copy,
        stream: stream as usize,
    };
    let previous = with_frame("task_spawn", |frame| Ok(frame.queued.replace(spawned)))?;
    if let Some(previous) = previous {
        dispatch(runtime, previous)?;
    }
    Ok(())
}

/// Hands the innermost frame's queued task to another thread (or runs it).
fn dispatch_queued(runtime: &Runtime) -> Result<(), RtError> {
    match take_queued() {
        Some(queued) => dispatch(runtime, queued),
        None => Ok(()),
    }
}

/// The innermost frame's queued task, if any.
fn take_queued() -> Option<Spawned> {
    FRAMES.with_borrow_mut(|frames| frames.last_mut().and_then(|frame| frame.queued.take()))
}

/// Runs `task` on an idle task thread, a new one, or (when
/// [`task_threads`] are busy) here and now.
fn dispatch(runtime: &Runtime, task: Spawned) -> Result<(), RtError> {
    let completion = Arc::new(Completion::default());
    let job = Job {
        task,
        completion: completion.clone(),
    };
    match hand_over(job).err() {
        Some(job) => run_here(runtime, job.task, "task_spawn"),
        None => with_frame("task_spawn", |frame| {
            frame.running.push(completion);
            Ok(())
        }),
    }
}

/// Runs a spawned task of the innermost frame on this thread; its end
/// events go to the frame (`step` names the caller in errors).
fn run_here(runtime: &Runtime, task: Spawned, step: &str) -> Result<(), RtError> {
    let ends = run(runtime, task)?;
    with_frame(step, |frame| {
        frame.ends.extend(ends);
        Ok(())
    })
}

/// Runs a spawned task's host code on this thread, on its stream; its end
/// events.
fn run(runtime: &Runtime, task: Spawned) -> Result<Vec<usize>, RtError> {
    let stream = task.stream as CUstream;
    let saved = CURRENT.with(|current| current.replace(stream));
    let mut context = task.context;
    // SAFETY: `task_spawn`'s contract: the body takes this context.
    unsafe { (task.body)(context.as_mut_ptr().cast()) };
    let ends = end_events(runtime, stream);
    CURRENT.with(|current| current.set(saved));
    ends
}

/// Closes the innermost frame: runs its queued task, waits for the host
/// code of its tasks on other threads; its stream joins its tasks when
/// next used.
pub fn tasks_end(runtime: &Runtime) -> Result<(), RtError> {
    if let Some(queued) = take_queued() {
        run_here(runtime, queued, "tasks_end")?;
    }
    let running = with_frame("tasks_end", |frame| Ok(std::mem::take(&mut frame.running)))?;
    let mut joined = Vec::new();
    crate::profile::host_call("join", || {
        for completion in running {
            joined.extend(completion.wait()?);
        }
        Ok::<(), RtError>(())
    })?;
    let frame = FRAMES
        .with_borrow_mut(Vec::pop)
        .ok_or_else(|| RtError::Internal("pgpu_rt_tasks_end without a taskgroup".into()))?;
    {
        let mut shared = shared();
        shared.pool.extend(frame.streams.iter().copied());
        let ends: Vec<usize> = frame.ends.into_iter().chain(joined).collect();
        if !ends.is_empty() {
            shared
                .pending
                .entry(frame.parent as usize)
                .or_default()
                .extend(ends);
            ANY_PENDING.store(true, Ordering::Release);
        }
    }
    CURRENT.with(|current| current.set(frame.parent));
    frame_closed();
    Ok(())
}

// ------------------------------------------------------------ task threads

/// A task handed to a task thread.
struct Job {
    task: Spawned,
    completion: Arc<Completion>,
}

// SAFETY: the body is a function of the program, its context a copy owned
// by the job, the stream a process-wide driver handle.
unsafe impl Send for Job {}

/// The task threads: the idle ones' inboxes, and how many exist.
struct Workers {
    idle: Vec<mpsc::Sender<Job>>,
    live: usize,
}

static WORKERS: Mutex<Workers> = Mutex::new(Workers {
    idle: Vec::new(),
    live: 0,
});

/// Task threads started so far (for the profile).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// How many task threads were started.
pub fn threads_started() -> usize {
    STARTED.load(Ordering::Relaxed)
}

fn workers() -> MutexGuard<'static, Workers> {
    WORKERS.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Gives `job` to an idle task thread or a new one; the job back when
/// every allowed thread is busy (or no thread could be started).
fn hand_over(job: Job) -> Result<(), Job> {
    let mut job = job;
    let mut idle = workers();
    while let Some(inbox) = idle.idle.pop() {
        match inbox.send(job) {
            Ok(()) => return Ok(()),
            // A thread that ended (only after a panic).
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    if idle.live >= task_threads() {
        return Err(job);
    }
    idle.live += 1;
    drop(idle);
    let (inbox, jobs) = mpsc::channel::<Job>();
    // The first job waits in a cell of its own, so that a thread that
    // fails to start leaves it with us.
    let first = Arc::new(Mutex::new(Some(job)));
    let name = format!("pgpu-task-{}", STARTED.fetch_add(1, Ordering::Relaxed));
    let started = std::thread::Builder::new().name(name).spawn({
        let first = first.clone();
        move || {
            let job = first.lock().ok().and_then(|mut job| job.take());
            if let Some(job) = job {
                task_thread(job, inbox, jobs);
            }
        }
    });
    if started.is_ok() {
        return Ok(());
    }
    workers().live -= 1;
    let job = first.lock().ok().and_then(|mut job| job.take());
    job.map_or(Ok(()), Err)
}

/// A task thread: runs `job`, then waits in the idle list for the next.
/// A failure of the runtime's own steps goes to the spawner (whose
/// `tasks_end` reports it); the body's errors exit the program there and
/// then, as on any thread.
fn task_thread(mut job: Job, inbox: mpsc::Sender<Job>, jobs: mpsc::Receiver<Job>) {
    loop {
        // A panic of the runtime's own code must not leave the spawner
        // waiting for the task forever (the body's are aborts: it is
        // `extern "C"`).
        let task = job.task;
        let ends = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::runtime().and_then(|runtime| run(runtime, task))
        }))
        .unwrap_or_else(|_| Err(RtError::Internal("a task thread panicked".into())));
        job.completion.finish(ends);
        workers().idle.push(inbox.clone());
        match jobs.recv() {
            Ok(next) => job = next,
            Err(_) => return,
        }
    }
}
