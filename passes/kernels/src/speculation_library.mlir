// The GPU-TLS library of `pgpu-lower-speculation` (seeds/gpu-tls.txt,
// Section III): the speculative read (Algorithm 1), the speculative write
// with eager intra-warp checking (Algorithm 2), lazy checking (Algorithm 3)
// and the two phases of the parallel commit (Algorithm 4), on one state
// list of i64 words per speculative loop. Every function is
// `pgpu.spmd_inline`: `pgpu-inline-spmd` inlines them into the window's
// kernels.
//
// Every function takes the state's layout: %st (the state), %ctl (word 0:
// the violation index, the first thread that must not commit; word 1:
// nonzero when a thread's read or write set overflowed), %tm (threads per
// window), %cap (entries per read and write set), %mask (the address
// table's size minus one, a power of two minus one), %w (threads that
// forward values to each other: the warp) and %tid (the thread, 0-based in
// the window). The state holds, in this order:
//
//   table (4 x (mask + 1) words): per address seen in the window, open
//     addressing on the address (0 = empty slot): the address, its minimum
//     writer (Algorithms 1 and 3, i64 max when none), its maximum reader
//     (Algorithm 2, -1 when none), its maximum writer (Algorithm 4, -1
//     when none);
//   counts (2 x tm words): read-set and write-set sizes per thread;
//   sets (9 x cap x tm words, entry e of thread t at e * tm + t so that a
//     warp's threads touch neighbouring words): read set (address, producer
//     -1 = master memory or the forwarding thread, the value's bits, table
//     slot), write set (address, bits, site, table slot or -1 for an
//     untracked write, element offset).
//
// Values travel as i64 bits: the typed helpers the pass generates convert.
// Addresses are byte addresses (`memref.extract_aligned_pointer_as_index`
// plus the element offset), the same for every view of one element.

func.func private @__pgpu_tls_at(%tm: index, %cap: index, %mask: index, %set: index, %e: index, %t: index) -> index attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %hk = arith.addi %mask, %c1 : index
  %tables = arith.muli %hk, %c4 : index
  %counts = arith.muli %tm, %c2 : index
  %base = arith.addi %tables, %counts : index
  %tc = arith.muli %tm, %cap : index
  %so = arith.muli %set, %tc : index
  %eo = arith.muli %e, %tm : index
  %a = arith.addi %base, %so : index
  %b = arith.addi %a, %eo : index
  %r = arith.addi %b, %t : index
  return %r : index
}

// Word of the read-set (%which = 0) or write-set (1) size of thread %t.
func.func private @__pgpu_tls_count_at(%tm: index, %mask: index, %which: index, %t: index) -> index attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %hk = arith.addi %mask, %c1 : index
  %tables = arith.muli %hk, %c4 : index
  %wo = arith.muli %which, %tm : index
  %a = arith.addi %tables, %wo : index
  %r = arith.addi %a, %t : index
  return %r : index
}

func.func private @__pgpu_tls_count(%st: memref<?xi64>, %tm: index, %mask: index, %which: index, %t: index) -> index attributes {pgpu.spmd_inline} {
  %p = func.call @__pgpu_tls_count_at(%tm, %mask, %which, %t) : (index, index, index, index) -> index
  %n = memref.load %st[%p] : memref<?xi64>
  %r = arith.index_cast %n : i64 to index
  return %r : index
}

// Word of field %which (0 address, 1 min writer, 2 max reader, 3 max
// committing writer) of table slot %slot.
func.func private @__pgpu_tls_table_at(%mask: index, %which: index, %slot: index) -> index attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %hk = arith.addi %mask, %c1 : index
  %a = arith.muli %which, %hk : index
  %r = arith.addi %a, %slot : index
  return %r : index
}

// Thread %t must not commit: the violation index becomes at most %t.
func.func private @__pgpu_tls_violate(%ctl: memref<?xi64>, %t: index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %ti = arith.index_cast %t : index to i64
  %old = memref.atomic_rmw mins %ti, %ctl[%c0] : (i64, memref<?xi64>) -> i64
  return
}

// Thread %t's sets are full: it must not commit, and the host doubles the
// capacity before the next window.
func.func private @__pgpu_tls_overflow(%ctl: memref<?xi64>, %t: index) attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  func.call @__pgpu_tls_violate(%ctl, %t) : (memref<?xi64>, index) -> ()
  %old = memref.atomic_rmw ori %one, %ctl[%c1] : (i64, memref<?xi64>) -> i64
  return
}

// The table slot of %key.
func.func private @__pgpu_tls_slot(%st: memref<?xi64>, %mask: index, %key: i64) -> index attributes {pgpu.spmd_inline} {
  %r:2 = func.call @__pgpu_tls_claim_slot(%st, %mask, %key) : (memref<?xi64>, index, i64) -> (index, i1)
  return %r#0 : index
}

// The table slot of %key, claimed with a compare-and-swap if the key is
// new (linear probing; the table is at most half full), and whether this
// call claimed it (no other thread has met the address in this window
// yet: it has no reader and no writer).
func.func private @__pgpu_tls_claim_slot(%st: memref<?xi64>, %mask: index, %key: i64) -> (index, i1) attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %true = arith.constant true
  %false = arith.constant false
  %s33 = arith.constant 33 : i64
  %mul = arith.constant -49064778989728563 : i64
  %x1 = arith.shrui %key, %s33 : i64
  %x2 = arith.xori %key, %x1 : i64
  %x3 = arith.muli %x2, %mul : i64
  %x4 = arith.shrui %x3, %s33 : i64
  %x5 = arith.xori %x3, %x4 : i64
  %xi = arith.index_castui %x5 : i64 to index
  %h = arith.andi %xi, %mask : index
  %slot:2 = scf.while (%p = %h, %claimed = %false) : (index, i1) -> (index, i1) {
    %seen = memref.load %st[%p] : memref<?xi64>
    %mine = arith.cmpi eq, %seen, %key : i64
    %old = scf.if %mine -> (i64) {
      scf.yield %seen : i64
    } else {
      %swapped = memref.generic_atomic_rmw %st[%p] : memref<?xi64> {
      ^bb0(%cur: i64):
        %zero = arith.constant 0 : i64
        %empty = arith.cmpi eq, %cur, %zero : i64
        %new = arith.select %empty, %key, %cur : i64
        memref.atomic_yield %new : i64
      }
      scf.yield %swapped : i64
    }
    %empty = arith.cmpi eq, %old, %z : i64
    %same = arith.cmpi eq, %old, %key : i64
    %done = arith.ori %empty, %same : i1
    %more = arith.xori %done, %true : i1
    %p1 = arith.addi %p, %c1 : index
    %pn = arith.andi %p1, %mask : index
    %next = arith.select %done, %p, %pn : index
    scf.condition(%more) %next, %empty : index, i1
  } do {
  ^bb0(%q: index, %e: i1):
    scf.yield %q, %e : index, i1
  }
  return %slot#0, %slot#1 : index, i1
}

// Appends (key, bits, site, table slot or -1, element offset) to thread
// %tid's write set, which holds %n64 entries (the caller loaded the count
// and checked that there is room).
func.func private @__pgpu_tls_append_write(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %n64: i64, %key: i64, %bits: i64, %site: i64, %slot: i64, %elem: i64) attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1 : i64
  %cp = func.call @__pgpu_tls_count_at(%tm, %mask, %c1, %tid) : (index, index, index, index) -> index
  %n = arith.index_cast %n64 : i64 to index
  %pk = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c4, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %key, %st[%pk] : memref<?xi64>
  %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c5, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %bits, %st[%pb] : memref<?xi64>
  %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c6, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %site, %st[%ps] : memref<?xi64>
  %pl = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c7, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %slot, %st[%pl] : memref<?xi64>
  %pe = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c8, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %elem, %st[%pe] : memref<?xi64>
  %n1 = arith.addi %n64, %one : i64
  memref.store %n1, %st[%cp] : memref<?xi64>
  return
}

// The site and element offset of write-set entry %e of thread %tid: where
// its bits go in memory.
func.func private @__pgpu_tls_entry_place(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %e: index) -> (index, index) attributes {pgpu.spmd_inline} {
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %psite = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c6, %e, %tid) : (index, index, index, index, index, index) -> index
  %site64 = memref.load %st[%psite] : memref<?xi64>
  %site = arith.index_cast %site64 : i64 to index
  %pe = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c8, %e, %tid) : (index, index, index, index, index, index) -> index
  %elem64 = memref.load %st[%pe] : memref<?xi64>
  %elem = arith.index_cast %elem64 : i64 to index
  return %site, %elem : index, index
}

// Whether thread %t's write set holds %key: (found, bits, entry). A set
// holds each address once; the loop has no early exit, so that its loads
// are independent and in flight together (a thread's latency, not the
// device's throughput, bounds a small window).
func.func private @__pgpu_tls_find_write(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %t: index, %key: i64) -> (i1, i64, index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %z = arith.constant 0 : i64
  %false = arith.constant false
  %n = func.call @__pgpu_tls_count(%st, %tm, %mask, %c1, %t) : (memref<?xi64>, index, index, index, index) -> index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%hit = %false, %at = %c0) -> (i1, index) {
    %p = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c4, %i, %t) : (index, index, index, index, index, index) -> index
    %k = memref.load %st[%p] : memref<?xi64>
    %eq = arith.cmpi eq, %k, %key : i64
    %hit2 = arith.ori %hit, %eq : i1
    %at2 = arith.select %eq, %i, %at : index
    scf.yield %hit2, %at2 : i1, index
  }
  %bits = scf.if %r#0 -> (i64) {
    %p = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c5, %r#1, %t) : (index, index, index, index, index, index) -> index
    %b = memref.load %st[%p] : memref<?xi64>
    scf.yield %b : i64
  } else {
    scf.yield %z : i64
  }
  return %r#0, %bits, %r#1 : i1, i64, index
}

// The latest thread in [%low, %high] (as i64, descending) whose write set
// holds %key, or %low - 1 when none does.
func.func private @__pgpu_tls_last_writer(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %low: i64, %high: i64, %key: i64) -> i64 attributes {pgpu.spmd_inline} {
  %one = arith.constant 1 : i64
  %true = arith.constant true
  %false = arith.constant false
  %last = scf.while (%i = %high) : (i64) -> i64 {
    %inside = arith.cmpi sge, %i, %low : i64
    %hit = scf.if %inside -> (i1) {
      %ii = arith.index_cast %i : i64 to index
      %f:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %ii, %key) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
      scf.yield %f#0 : i1
    } else {
      scf.yield %false : i1
    }
    %miss = arith.xori %hit, %true : i1
    %go = arith.andi %inside, %miss : i1
    scf.condition(%go) %i : i64
  } do {
  ^bb0(%i: i64):
    %i1 = arith.subi %i, %one : i64
    scf.yield %i1 : i64
  }
  %found = arith.cmpi sge, %last, %low : i64
  %none = arith.subi %low, %one : i64
  %r = arith.select %found, %last, %none : i64
  return %r : i64
}

// Algorithm 1, speculative read with intra-warp value forwarding, for a
// read the thread's own writes do not answer (the typed load helper looks
// there first): the latest earlier thread of the same warp, from the
// address's minimum writer on, whose write set holds %key, and its bits;
// -1 (master memory) when there is none. A slot the reader claimed
// (%fresh) has no writer yet: nothing to search, nor to load.
func.func private @__pgpu_tls_forward(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %w: index, %tid: index, %key: i64, %slot: index, %fresh: i1) -> (i64, i64) attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  %m1 = arith.constant -1 : i64
  %max = arith.constant 9223372036854775807 : i64
  %minw = scf.if %fresh -> (i64) {
    scf.yield %max : i64
  } else {
    %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %slot) : (index, index, index) -> index
    %loaded = memref.load %st[%mwp] : memref<?xi64>
    scf.yield %loaded : i64
  }
  %warp = arith.divui %tid, %w : index
  %first = arith.muli %warp, %w : index
  %firsti = arith.index_cast %first : index to i64
  %low = arith.maxsi %firsti, %minw : i64
  %tidi = arith.index_cast %tid : index to i64
  %high = arith.subi %tidi, %one : i64
  %p = func.call @__pgpu_tls_last_writer(%st, %tm, %cap, %mask, %low, %high, %key) : (memref<?xi64>, index, index, index, i64, i64, i64) -> i64
  %found = arith.cmpi sge, %p, %low : i64
  %f:2 = scf.if %found -> (i64, i64) {
    %pi = arith.index_cast %p : i64 to index
    %v:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %pi, %key) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
    scf.yield %p, %v#1 : i64, i64
  } else {
    %z = arith.constant 0 : i64
    scf.yield %m1, %z : i64, i64
  }
  return %f#0, %f#1 : i64, i64
}

// The end of Algorithm 1: records the read in thread %tid's read set (the
// typed load helper calls it only when the set has room) and raises the
// address's reader field to %rank (GPU-TLS: the thread, so the field is
// the maximum reader; direct update: %tm minus the thread, so it encodes
// the minimum reader).
func.func private @__pgpu_tls_record_read(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %key: i64, %slot: index, %producer: i64, %bits: i64, %rank: i64) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1 : i64
  %cp = func.call @__pgpu_tls_count_at(%tm, %mask, %c0, %tid) : (index, index, index, index) -> index
  %n64 = memref.load %st[%cp] : memref<?xi64>
  %n = arith.index_cast %n64 : i64 to index
  %pk = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c0, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %key, %st[%pk] : memref<?xi64>
  %pp = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c1, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %producer, %st[%pp] : memref<?xi64>
  %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c2, %n, %tid) : (index, index, index, index, index, index) -> index
  memref.store %bits, %st[%pb] : memref<?xi64>
  %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c3, %n, %tid) : (index, index, index, index, index, index) -> index
  %slot64 = arith.index_cast %slot : index to i64
  memref.store %slot64, %st[%ps] : memref<?xi64>
  %n1 = arith.addi %n64, %one : i64
  memref.store %n1, %st[%cp] : memref<?xi64>
  %mrp = func.call @__pgpu_tls_table_at(%mask, %c2, %slot) : (index, index, index) -> index
  %old = memref.atomic_rmw maxs %rank, %st[%mrp] : (i64, memref<?xi64>) -> i64
  return
}

// Algorithm 2, speculative write with eager intra-warp dependency checking
// (when %tracked; an untracked write only needs buffering: its element is
// the iteration's own): later threads of the warp that read %key from
// master memory or from a thread up to %tid must not commit; the write goes
// to the thread's write buffer (a second write of an address replaces the
// first) and lowers the address's minimum writer.
func.func private @__pgpu_tls_write(%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %w: index, %tid: index, %key: i64, %bits: i64, %site: i64, %elem: i64, %tracked: i1) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1 : i64
  %m1 = arith.constant -1 : i64
  %true = arith.constant true
  %tidi = arith.index_cast %tid : index to i64
  %own:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %tid, %key) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
  %cp = func.call @__pgpu_tls_count_at(%tm, %mask, %c1, %tid) : (index, index, index, index) -> index
  %n64 = memref.load %st[%cp] : memref<?xi64>
  %n = arith.index_cast %n64 : i64 to index
  %free = arith.cmpi ult, %n, %cap : index
  %room = arith.ori %own#0, %free : i1
  // A full write set takes no new address (nor a table slot: the table
  // holds at most 2 x cap addresses per thread).
  scf.if %room {
    %slot = scf.if %tracked -> (i64) {
      // A slot this write claimed has no reader yet (a reader that comes
      // later and reads master memory is the lazy check's).
      %s:2 = func.call @__pgpu_tls_claim_slot(%st, %mask, %key) : (memref<?xi64>, index, i64) -> (index, i1)
      %maxr = scf.if %s#1 -> (i64) {
        scf.yield %m1 : i64
      } else {
        %mrp = func.call @__pgpu_tls_table_at(%mask, %c2, %s#0) : (index, index, index) -> index
        %loaded = memref.load %st[%mrp] : memref<?xi64>
        scf.yield %loaded : i64
      }
      %warp = arith.divui %tid, %w : index
      %next = arith.addi %warp, %c1 : index
      %end = arith.muli %next, %w : index
      %endi = arith.index_cast %end : index to i64
      %maxr1 = arith.addi %maxr, %one : i64
      %stop = arith.minsi %endi, %maxr1 : i64
      %from = arith.addi %tidi, %one : i64
      %upper = arith.maxsi %stop, %from : i64
      %lo = arith.index_cast %from : i64 to index
      %hi = arith.index_cast %upper : i64 to index
      scf.for %i = %lo to %hi step %c1 {
        %nr = func.call @__pgpu_tls_count(%st, %tm, %mask, %c0, %i) : (memref<?xi64>, index, index, index, index) -> index
        scf.for %e = %c0 to %nr step %c1 {
          %pk = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c0, %e, %i) : (index, index, index, index, index, index) -> index
          %k = memref.load %st[%pk] : memref<?xi64>
          %pp = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c1, %e, %i) : (index, index, index, index, index, index) -> index
          %producer = memref.load %st[%pp] : memref<?xi64>
          %same = arith.cmpi eq, %k, %key : i64
          %stale = arith.cmpi sle, %producer, %tidi : i64
          %bad = arith.andi %same, %stale : i1
          scf.if %bad {
            func.call @__pgpu_tls_violate(%ctl, %i) : (memref<?xi64>, index) -> ()
          }
        }
      }
      %s64 = arith.index_cast %s#0 : index to i64
      scf.yield %s64 : i64
    } else {
      scf.yield %m1 : i64
    }
    scf.if %own#0 {
      %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c5, %own#2, %tid) : (index, index, index, index, index, index) -> index
      memref.store %bits, %st[%pb] : memref<?xi64>
    } else {
      func.call @__pgpu_tls_append_write(%st, %tm, %cap, %mask, %tid, %n64, %key, %bits, %site, %slot, %elem) : (memref<?xi64>, index, index, index, index, i64, i64, i64, i64, i64, i64) -> ()
    }
    // A tracked write lowers the address's minimum writer and raises its
    // maximum writer (the parallel commit's owner).
    %first = arith.xori %own#0, %true : i1
    %counted = arith.andi %tracked, %first : i1
    scf.if %counted {
      %sl = arith.index_cast %slot : i64 to index
      %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %sl) : (index, index, index) -> index
      %old = memref.atomic_rmw mins %tidi, %st[%mwp] : (i64, memref<?xi64>) -> i64
      %xwp = func.call @__pgpu_tls_table_at(%mask, %c3, %sl) : (index, index, index) -> index
      %oldx = memref.atomic_rmw maxs %tidi, %st[%xwp] : (i64, memref<?xi64>) -> i64
    }
  } else {
    func.call @__pgpu_tls_overflow(%ctl, %tid) : (memref<?xi64>, index) -> ()
  }
  return
}

// Algorithm 3, lazy dependency checking, after every thread of the window
// has run: a read from master memory is stale when an earlier thread of
// the window wrote the address (the paper checks earlier warps only and
// trusts the eager check for the thread's own warp; threads of a warp are
// not in lockstep on Volta and later GPUs or on the CPU, so a write can
// land between a neighbour's read and the eager check: we check every
// earlier thread, which the minimum writer gives exactly). A forwarded
// read is stale when its producer's final value differs or a thread
// between the producer and the reader wrote the address.
func.func private @__pgpu_tls_check(%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %w: index, %tid: index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1 : i64
  %m1 = arith.constant -1 : i64
  %true = arith.constant true
  %tidi = arith.index_cast %tid : index to i64
  %n = func.call @__pgpu_tls_count(%st, %tm, %mask, %c0, %tid) : (memref<?xi64>, index, index, index, index) -> index
  scf.for %e = %c0 to %n step %c1 {
    %pk = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c0, %e, %tid) : (index, index, index, index, index, index) -> index
    %key = memref.load %st[%pk] : memref<?xi64>
    %pp = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c1, %e, %tid) : (index, index, index, index, index, index) -> index
    %producer = memref.load %st[%pp] : memref<?xi64>
    %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c2, %e, %tid) : (index, index, index, index, index, index) -> index
    %bits = memref.load %st[%pb] : memref<?xi64>
    %master = arith.cmpi eq, %producer, %m1 : i64
    %bad = scf.if %master -> (i1) {
      %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c3, %e, %tid) : (index, index, index, index, index, index) -> index
      %slot64 = memref.load %st[%ps] : memref<?xi64>
      %slot = arith.index_cast %slot64 : i64 to index
      %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %slot) : (index, index, index) -> index
      %minw = memref.load %st[%mwp] : memref<?xi64>
      %earlier = arith.cmpi slt, %minw, %tidi : i64
      scf.yield %earlier : i1
    } else {
      %pi = arith.index_cast %producer : i64 to index
      %f:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %pi, %key) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
      %same = arith.cmpi eq, %f#1, %bits : i64
      %kept = arith.andi %f#0, %same : i1
      %low = arith.addi %producer, %one : i64
      %high = arith.subi %tidi, %one : i64
      %last = func.call @__pgpu_tls_last_writer(%st, %tm, %cap, %mask, %low, %high, %key) : (memref<?xi64>, index, index, index, i64, i64, i64) -> i64
      %between = arith.cmpi sge, %last, %low : i64
      %fresh = arith.xori %between, %true : i1
      %good = arith.andi %kept, %fresh : i1
      %stale = arith.xori %good, %true : i1
      scf.yield %stale : i1
    }
    scf.if %bad {
      func.call @__pgpu_tls_violate(%ctl, %tid) : (memref<?xi64>, index) -> ()
    }
  }
  return
}

// Algorithm 4, the parallel commit, for write-set entry %e of thread %tid:
// whether it goes to memory (the thread commits and no later committing
// thread wrote the address; with %serial, the caller commits threads in
// order, so every entry of a committing thread goes), its site, element
// offset and bits. The paper takes a lock per table entry to find each
// address's last committing writer; here the address's maximum writer
// (raised by every tracked write) is that writer unless it must not
// commit, and only then (a write-after-write across the violation index)
// does the entry look for a committing writer between itself and the
// violation index in their write sets. No lock, and no phase before the
// commit.
func.func private @__pgpu_tls_entry(%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %e: index, %serial: i1) -> (i1, index, index, i64) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %true = arith.constant true
  %false = arith.constant false
  %tidi = arith.index_cast %tid : index to i64
  %v = memref.load %ctl[%c0] : memref<?xi64>
  %live = arith.cmpi slt, %tidi, %v : i64
  %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c7, %e, %tid) : (index, index, index, index, index, index) -> index
  %slot64 = memref.load %st[%ps] : memref<?xi64>
  %untracked = arith.cmpi slt, %slot64, %z : i64
  %free = arith.ori %untracked, %serial : i1
  %goes = scf.if %live -> (i1) {
    %owner = scf.if %free -> (i1) {
      scf.yield %true : i1
    } else {
      %slot = arith.index_cast %slot64 : i64 to index
      %mw = func.call @__pgpu_tls_table_at(%mask, %c3, %slot) : (index, index, index) -> index
      %max = memref.load %st[%mw] : memref<?xi64>
      %last = arith.cmpi eq, %max, %tidi : i64
      %squashed = arith.cmpi sge, %max, %v : i64
      %look = scf.if %squashed -> (i1) {
        %pk = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c4, %e, %tid) : (index, index, index, index, index, index) -> index
        %key = memref.load %st[%pk] : memref<?xi64>
        %low = arith.addi %tidi, %one : i64
        %high = arith.subi %v, %one : i64
        %later = func.call @__pgpu_tls_last_writer(%st, %tm, %cap, %mask, %low, %high, %key) : (memref<?xi64>, index, index, index, i64, i64, i64) -> i64
        %none = arith.cmpi slt, %later, %low : i64
        scf.yield %none : i1
      } else {
        scf.yield %false : i1
      }
      %mine = arith.ori %last, %look : i1
      scf.yield %mine : i1
    }
    scf.yield %owner : i1
  } else {
    scf.yield %false : i1
  }
  %place:2 = func.call @__pgpu_tls_entry_place(%st, %tm, %cap, %mask, %tid, %e) : (memref<?xi64>, index, index, index, index, index) -> (index, index)
  %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c5, %e, %tid) : (index, index, index, index, index, index) -> index
  %bits = memref.load %st[%pb] : memref<?xi64>
  return %goes, %place#0, %place#1, %bits : i1, index, index, i64
}

// Empties the table slots thread %tid used and its sets, for the next
// window (every slot in use is in some thread's sets; threads sharing a
// slot reset it together, hence the atomic stores).
func.func private @__pgpu_tls_cleanup(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %z = arith.constant 0 : i64
  %nr = func.call @__pgpu_tls_count(%st, %tm, %mask, %c0, %tid) : (memref<?xi64>, index, index, index, index) -> index
  scf.for %e = %c0 to %nr step %c1 {
    %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c3, %e, %tid) : (index, index, index, index, index, index) -> index
    %slot64 = memref.load %st[%ps] : memref<?xi64>
    %slot = arith.index_cast %slot64 : i64 to index
    func.call @__pgpu_tls_reset_slot(%st, %mask, %slot) : (memref<?xi64>, index, index) -> ()
  }
  %nw = func.call @__pgpu_tls_count(%st, %tm, %mask, %c1, %tid) : (memref<?xi64>, index, index, index, index) -> index
  scf.for %e = %c0 to %nw step %c1 {
    %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c7, %e, %tid) : (index, index, index, index, index, index) -> index
    %slot64 = memref.load %st[%ps] : memref<?xi64>
    %tracked = arith.cmpi sge, %slot64, %z : i64
    scf.if %tracked {
      %slot = arith.index_cast %slot64 : i64 to index
      func.call @__pgpu_tls_reset_slot(%st, %mask, %slot) : (memref<?xi64>, index, index) -> ()
    }
  }
  %cr = func.call @__pgpu_tls_count_at(%tm, %mask, %c0, %tid) : (index, index, index, index) -> index
  memref.store %z, %st[%cr] : memref<?xi64>
  %cw = func.call @__pgpu_tls_count_at(%tm, %mask, %c1, %tid) : (index, index, index, index) -> index
  memref.store %z, %st[%cw] : memref<?xi64>
  return
}

func.func private @__pgpu_tls_reset_slot(%st: memref<?xi64>, %mask: index, %slot: index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0 : i64
  %max = arith.constant 9223372036854775807 : i64
  %m1 = arith.constant -1 : i64
  %pk = func.call @__pgpu_tls_table_at(%mask, %c0, %slot) : (index, index, index) -> index
  %ok = memref.atomic_rmw assign %z, %st[%pk] : (i64, memref<?xi64>) -> i64
  %pw = func.call @__pgpu_tls_table_at(%mask, %c1, %slot) : (index, index, index) -> index
  %ow = memref.atomic_rmw assign %max, %st[%pw] : (i64, memref<?xi64>) -> i64
  %pr = func.call @__pgpu_tls_table_at(%mask, %c2, %slot) : (index, index, index) -> index
  %or = memref.atomic_rmw assign %m1, %st[%pr] : (i64, memref<?xi64>) -> i64
  %pc = func.call @__pgpu_tls_table_at(%mask, %c3, %slot) : (index, index, index) -> index
  %oc = memref.atomic_rmw assign %m1, %st[%pc] : (i64, memref<?xi64>) -> i64
  return
}

// The initial value of state word %j: the table's minimum writers are
// i64 max, its maximum readers and writers -1, everything else 0.
func.func private @__pgpu_tls_init(%st: memref<?xi64>, %mask: index, %j: index) attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i64
  %max = arith.constant 9223372036854775807 : i64
  %m1 = arith.constant -1 : i64
  %hk = arith.addi %mask, %c1 : index
  %two = arith.muli %hk, %c2 : index
  %four = arith.muli %hk, %c4 : index
  %ge1 = arith.cmpi uge, %j, %hk : index
  %ge2 = arith.cmpi uge, %j, %two : index
  %ge4 = arith.cmpi uge, %j, %four : index
  %a = arith.select %ge4, %z, %m1 : i64
  %b = arith.select %ge2, %a, %max : i64
  %v = arith.select %ge1, %b, %z : i64
  memref.store %v, %st[%j] : memref<?xi64>
  return
}

// The direct-update scheme the paper compares GPU-TLS with (Figure 7: the
// CPU TLS of Oancea et al. with in-place memory versioning, its reference
// [5]), on the same state. A speculative write goes straight to memory; the
// address's first writer in time saves the value before the window in the
// table (field 3, which the parallel commit uses otherwise), and the
// writer's write set keeps its own final value. A read reads memory and
// is recorded; field 2 of its address keeps the minimum reader (as %tm
// minus the thread). Every dependence among the window's threads is a
// violation: RAW and WAW at the later thread, WAR at the writer, and a read
// that saw a later thread's value at the reader. After the check, the
// threads that must not commit undo their writes (the saved value goes
// back where no committing thread wrote) and the committing first writer
// of an address stores its value again (a later writer may have
// overwritten it).

// The speculative write of %bits to %key by thread %tid; %old is the
// element's value, loaded before this call. Returns whether the caller
// stores %bits to memory: false when the write set is full (the thread
// then cannot commit).
func.func private @__pgpu_du_write(%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %key: i64, %bits: i64, %old: i64, %site: i64, %elem: i64) -> i1 attributes {pgpu.spmd_inline} {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %max = arith.constant 9223372036854775807 : i64
  %tidi = arith.index_cast %tid : index to i64
  %own:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %tid, %key) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
  %cp = func.call @__pgpu_tls_count_at(%tm, %mask, %c1, %tid) : (index, index, index, index) -> index
  %n64 = memref.load %st[%cp] : memref<?xi64>
  %n = arith.index_cast %n64 : i64 to index
  %free = arith.cmpi ult, %n, %cap : index
  %room = arith.ori %own#0, %free : i1
  scf.if %room {
    scf.if %own#0 {
      %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c5, %own#2, %tid) : (index, index, index, index, index, index) -> index
      memref.store %bits, %st[%pb] : memref<?xi64>
    } else {
      %s = func.call @__pgpu_tls_slot(%st, %mask, %key) : (memref<?xi64>, index, i64) -> index
      // %old was loaded before this atomic, and the element is stored in
      // place only after it: the fences order both around it (the
      // kernels' atomics are relaxed, pgpu-relax-atomics), so no writer
      // stores to the element before the first one here has loaded it.
      %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %s) : (index, index, index) -> index
      llvm.fence syncscope("device") acq_rel
      %before = memref.atomic_rmw mins %tidi, %st[%mwp] : (i64, memref<?xi64>) -> i64
      llvm.fence syncscope("device") acq_rel
      %first = arith.cmpi eq, %before, %max : i64
      scf.if %first {
        %op = func.call @__pgpu_tls_table_at(%mask, %c3, %s) : (index, index, index) -> index
        memref.store %old, %st[%op] : memref<?xi64>
      }
      %s64 = arith.index_cast %s : index to i64
      func.call @__pgpu_tls_append_write(%st, %tm, %cap, %mask, %tid, %n64, %key, %bits, %site, %s64, %elem) : (memref<?xi64>, index, index, index, index, i64, i64, i64, i64, i64, i64) -> ()
    }
  } else {
    func.call @__pgpu_tls_overflow(%ctl, %tid) : (memref<?xi64>, index) -> ()
  }
  return %room : i1
}

// The direct-update check of thread %tid, after every thread of the window
// has run. A read is stale when an earlier thread wrote the address (RAW)
// or when it saw another value than the one before the window (a later
// thread had written it: a read that came after a WAR); a write must not
// commit when an earlier thread wrote the address (WAW) or read it (WAR).
func.func private @__pgpu_du_check(%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %max = arith.constant 9223372036854775807 : i64
  %tidi = arith.index_cast %tid : index to i64
  %tmi = arith.index_cast %tm : index to i64
  %rank = arith.subi %tmi, %tidi : i64
  %nr = func.call @__pgpu_tls_count(%st, %tm, %mask, %c0, %tid) : (memref<?xi64>, index, index, index, index) -> index
  scf.for %e = %c0 to %nr step %c1 {
    %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c2, %e, %tid) : (index, index, index, index, index, index) -> index
    %bits = memref.load %st[%pb] : memref<?xi64>
    %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c3, %e, %tid) : (index, index, index, index, index, index) -> index
    %slot64 = memref.load %st[%ps] : memref<?xi64>
    %slot = arith.index_cast %slot64 : i64 to index
    %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %slot) : (index, index, index) -> index
    %minw = memref.load %st[%mwp] : memref<?xi64>
    %raw = arith.cmpi slt, %minw, %tidi : i64
    %written = arith.cmpi ne, %minw, %max : i64
    %bad = scf.if %written -> (i1) {
      %op = func.call @__pgpu_tls_table_at(%mask, %c3, %slot) : (index, index, index) -> index
      %orig = memref.load %st[%op] : memref<?xi64>
      %changed = arith.cmpi ne, %bits, %orig : i64
      %either = arith.ori %raw, %changed : i1
      scf.yield %either : i1
    } else {
      scf.yield %raw : i1
    }
    scf.if %bad {
      func.call @__pgpu_tls_violate(%ctl, %tid) : (memref<?xi64>, index) -> ()
    }
  }
  %nw = func.call @__pgpu_tls_count(%st, %tm, %mask, %c1, %tid) : (memref<?xi64>, index, index, index, index) -> index
  scf.for %e = %c0 to %nw step %c1 {
    %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c7, %e, %tid) : (index, index, index, index, index, index) -> index
    %slot64 = memref.load %st[%ps] : memref<?xi64>
    %slot = arith.index_cast %slot64 : i64 to index
    %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %slot) : (index, index, index) -> index
    %minw = memref.load %st[%mwp] : memref<?xi64>
    %waw = arith.cmpi slt, %minw, %tidi : i64
    %mrp = func.call @__pgpu_tls_table_at(%mask, %c2, %slot) : (index, index, index) -> index
    %minr = memref.load %st[%mrp] : memref<?xi64>
    %war = arith.cmpi sgt, %minr, %rank : i64
    %bad = arith.ori %waw, %war : i1
    scf.if %bad {
      func.call @__pgpu_tls_violate(%ctl, %tid) : (memref<?xi64>, index) -> ()
    }
  }
  return
}

// The direct-update undo, for write-set entry %e of thread %tid in a
// window of %k threads: whether memory gets a value, its site, element
// offset and bits. Nothing moves when every thread commits. Otherwise a
// thread that must not commit puts back the value from before the window
// where no committing thread wrote the address, and a committing thread
// (the address's only committing writer: any later writer must not
// commit) stores its final value again.
func.func private @__pgpu_du_entry(%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %e: index, %k: index) -> (i1, index, index, i64) attributes {pgpu.spmd_inline} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %tidi = arith.index_cast %tid : index to i64
  %ki = arith.index_cast %k : index to i64
  %v = memref.load %ctl[%c0] : memref<?xi64>
  %violated = arith.cmpi slt, %v, %ki : i64
  %live = arith.cmpi slt, %tidi, %v : i64
  %ps = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c7, %e, %tid) : (index, index, index, index, index, index) -> index
  %slot64 = memref.load %st[%ps] : memref<?xi64>
  %slot = arith.index_cast %slot64 : i64 to index
  %mwp = func.call @__pgpu_tls_table_at(%mask, %c1, %slot) : (index, index, index) -> index
  %minw = memref.load %st[%mwp] : memref<?xi64>
  %unowned = arith.cmpi sge, %minw, %v : i64
  %restore = arith.andi %unowned, %violated : i1
  %again = arith.andi %live, %violated : i1
  %goes = arith.ori %restore, %again : i1
  %pb = func.call @__pgpu_tls_at(%tm, %cap, %mask, %c5, %e, %tid) : (index, index, index, index, index, index) -> index
  %mine = memref.load %st[%pb] : memref<?xi64>
  %op = func.call @__pgpu_tls_table_at(%mask, %c3, %slot) : (index, index, index) -> index
  %orig = memref.load %st[%op] : memref<?xi64>
  %bits = arith.select %live, %mine, %orig : i64
  %place:2 = func.call @__pgpu_tls_entry_place(%st, %tm, %cap, %mask, %tid, %e) : (memref<?xi64>, index, index, index, index, index) -> (index, index)
  return %goes, %place#0, %place#1, %bits : i1, index, index, i64
}
