// The device math library of `pgpu-define-device-math` (see
// define_device_math.rs): exp, log, pow, sin, cos and fmod in f64, in the
// LLVM dialect, for the `__nv_*` functions that `convert-gpu-to-nvvm`
// declares. The pass generates the f32 forms (computed in f64, rounded
// once) and the one-instruction functions (sqrt, fabs, floor, ...) itself.
//
// Everything here is IEEE f64 arithmetic without fast-math flags, written
// so that no step depends on how the backend rounds: `llvm.intr.fma` where
// a product must not be rounded, separate `llvm.fmul` / `llvm.fadd` (LLVM
// does not contract them without a `contract` flag) everywhere else. So
// the CPU computes bit for bit what the GPU computes, and the accuracy
// test (backends/nvptx/tests/device_math.rs) runs this text on the CPU.
//
// Error-free transformations used below (Knuth, Dekker; a + b and a * b
// with their exact rounding errors):
//   Fast2Sum(a, b), |a| >= |b|:  s = a + b, e = (a - s) + b
//   TwoSum(a, b), any order:     s = a + b, t = s - a,
//                                e = (a - (s - t)) + (b - t)
//   TwoProd(a, b):               p = a * b, e = fma(a, b, -p)
// A "double-double" (hi, lo) is the unevaluated sum hi + lo.
//
// Polynomial coefficients are Taylor coefficients (1/n!, 2/(2k+1)),
// rounded to the nearest double (computed with 2000-bit arithmetic); each
// function states the truncation error, which is far below the final
// rounding.

// exp(h + l), |l| at most about ulp(h): the core of exp (l = 0) and pow.
//
// Reduction: k = round(h / ln 2), r = h - k ln 2 + l, |r| <= ln 2 / 2
// (plus rounding), exp(h + l) = 2^k exp(r). ln 2 = ln2_hi + ln2_lo with
// ln2_hi of 42 bits, so k ln2_hi is exact for |k| < 2^11 and r_hi =
// h - k ln2_hi is exact (one fma, no cancellation error); r_lo carries
// the rest. exp(r) = 1 + r + r^2 q(r), q the Taylor series of
// (exp(r) - 1 - r) / r^2 through r^11 (exp through r^13): the first term
// left out, r^14/14! < 4.2e-18 for |r| < 0.3466, is below 2^-57 of
// exp(r) >= 0.707. 1 + r is kept exact (Fast2Sum), so the sum has one
// final rounding. The scaling by 2^k is split into 2^k1 2^k2 (k1 = k/2):
// p 2^k1 is exact and the second product rounds once, to a subnormal if
// need be. Arguments above 710 (below -746) are clamped there: exp
// overflows to inf (underflows to 0) through the scaling itself.
llvm.func internal @__pgpu_math_exp_dd(%h: f64, %l: f64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %one = llvm.mlir.constant(1.0 : f64) : f64
  %max_arg = llvm.mlir.constant(710.0 : f64) : f64
  %min_arg = llvm.mlir.constant(-746.0 : f64) : f64
  %inv_ln2 = llvm.mlir.constant(1.4426950408889634 : f64) : f64
  %ln2_hi = llvm.mlir.constant(0.6931471805598903 : f64) : f64
  %ln2_lo = llvm.mlir.constant(5.497923018708371e-14 : f64) : f64
  // c<n> = 1/n!
  %c2 = llvm.mlir.constant(0.5 : f64) : f64
  %c3 = llvm.mlir.constant(0.16666666666666666 : f64) : f64
  %c4 = llvm.mlir.constant(0.041666666666666664 : f64) : f64
  %c5 = llvm.mlir.constant(0.008333333333333333 : f64) : f64
  %c6 = llvm.mlir.constant(0.001388888888888889 : f64) : f64
  %c7 = llvm.mlir.constant(1.984126984126984e-04 : f64) : f64
  %c8 = llvm.mlir.constant(2.48015873015873e-05 : f64) : f64
  %c9 = llvm.mlir.constant(2.7557319223985893e-06 : f64) : f64
  %c10 = llvm.mlir.constant(2.755731922398589e-07 : f64) : f64
  %c11 = llvm.mlir.constant(2.505210838544172e-08 : f64) : f64
  %c12 = llvm.mlir.constant(2.08767569878681e-09 : f64) : f64
  %c13 = llvm.mlir.constant(1.6059043836821613e-10 : f64) : f64
  %i1 = llvm.mlir.constant(1 : i64) : i64
  %bias = llvm.mlir.constant(1023 : i64) : i64
  %i52 = llvm.mlir.constant(52 : i64) : i64
  // Clamp (a NaN goes to the upper bound; it is put back at the end).
  %below = llvm.fcmp "olt" %h, %max_arg : f64
  %h1 = llvm.select %below, %h, %max_arg : i1, f64
  %above = llvm.fcmp "ogt" %h1, %min_arg : f64
  %hc = llvm.select %above, %h1, %min_arg : i1, f64
  %in_range = llvm.and %below, %above : i1
  %lc = llvm.select %in_range, %l, %zero : i1, f64
  // r = r_hi + r_lo = r + r_err
  %t = llvm.fmul %hc, %inv_ln2 : f64
  %k = llvm.intr.roundeven(%t) : (f64) -> f64
  %nk = llvm.fneg %k : f64
  %r_hi = llvm.intr.fma(%nk, %ln2_hi, %hc) : (f64, f64, f64) -> f64
  %r_lo = llvm.intr.fma(%nk, %ln2_lo, %lc) : (f64, f64, f64) -> f64
  %r = llvm.fadd %r_hi, %r_lo : f64
  %r_d = llvm.fsub %r_hi, %r : f64
  %r_err = llvm.fadd %r_d, %r_lo : f64
  // q(r) = c2 + c3 r + ... + c13 r^11
  %q11 = llvm.intr.fma(%c13, %r, %c12) : (f64, f64, f64) -> f64
  %q10 = llvm.intr.fma(%q11, %r, %c11) : (f64, f64, f64) -> f64
  %q9 = llvm.intr.fma(%q10, %r, %c10) : (f64, f64, f64) -> f64
  %q8 = llvm.intr.fma(%q9, %r, %c9) : (f64, f64, f64) -> f64
  %q7 = llvm.intr.fma(%q8, %r, %c8) : (f64, f64, f64) -> f64
  %q6 = llvm.intr.fma(%q7, %r, %c7) : (f64, f64, f64) -> f64
  %q5 = llvm.intr.fma(%q6, %r, %c6) : (f64, f64, f64) -> f64
  %q4 = llvm.intr.fma(%q5, %r, %c5) : (f64, f64, f64) -> f64
  %q3 = llvm.intr.fma(%q4, %r, %c4) : (f64, f64, f64) -> f64
  %q2 = llvm.intr.fma(%q3, %r, %c3) : (f64, f64, f64) -> f64
  %q = llvm.intr.fma(%q2, %r, %c2) : (f64, f64, f64) -> f64
  // exp(r + r_err) = 1 + r + [r^2 q + r_err (1 + r)], 1 + r = u + u_err
  %r2 = llvm.fmul %r, %r : f64
  %err_term = llvm.intr.fma(%r_err, %r, %r_err) : (f64, f64, f64) -> f64
  %small = llvm.intr.fma(%r2, %q, %err_term) : (f64, f64, f64) -> f64
  %u = llvm.fadd %one, %r : f64
  %u_d = llvm.fsub %one, %u : f64
  %u_err = llvm.fadd %u_d, %r : f64
  %tail = llvm.fadd %u_err, %small : f64
  %p = llvm.fadd %u, %tail : f64
  // p 2^k1 2^k2, k in [-1076, 1024], k1 and k2 in [-538, 512]
  %ki = llvm.fptosi %k : f64 to i64
  %k1 = llvm.ashr %ki, %i1 : i64
  %k2 = llvm.sub %ki, %k1 : i64
  %e1 = llvm.add %k1, %bias : i64
  %b1 = llvm.shl %e1, %i52 : i64
  %s1 = llvm.bitcast %b1 : i64 to f64
  %e2 = llvm.add %k2, %bias : i64
  %b2 = llvm.shl %e2, %i52 : i64
  %s2 = llvm.bitcast %b2 : i64 to f64
  %y1 = llvm.fmul %p, %s1 : f64
  %y = llvm.fmul %y1, %s2 : f64
  %is_nan = llvm.fcmp "uno" %h, %h : f64
  %quiet = llvm.fadd %h, %h : f64
  %res = llvm.select %is_nan, %quiet, %y : i1, f64
  llvm.return %res : f64
}

// exp(x): exp(NaN) = NaN, exp(-inf) = 0, exp(inf) = inf.
llvm.func internal @__pgpu_math_exp(%x: f64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %r = llvm.call @__pgpu_math_exp_dd(%x, %zero) : (f64, f64) -> f64
  llvm.return %r : f64
}

// log(x) as a normalized double-double (hi, lo) for finite x > 0, to
// about 2^-64 relative (pow needs that much: y log x up to 745 must be
// right to 2^-54 absolute). Other arguments give some finite or NaN
// value, never poison; the callers handle them.
//
// Reduction: x = 2^e m, m in (sqrt(1/2), sqrt 2] (subnormals are scaled
// by 2^54 first), log x = e ln 2 + log m. With f = m - 1 (exact) and
// s = f / (2 + f), |s| <= 0.1716: log m = 2 atanh s = 2s + 2s^3/3 +
// 2s^5/5 + ..., through 2s^25/25: the first term left out is below
// 2^-70 of 2s. s is a double-double (the division's remainder is exact
// with an fma), s^3 = w too, w 2/3 is a double-double product with 2/3 =
// u0_hi + u0_lo, and the rest, w z (2/5 + 2/7 z + ...) with z = s^2
// (below 2^-12 of 2s), is a double. e ln 2 uses the 42-bit ln2_hi (e
// ln2_hi exact for |e| < 2^11).
llvm.func internal @__pgpu_math_log_dd(%x: f64) -> !llvm.struct<(f64, f64)> {
  %one = llvm.mlir.constant(1.0 : f64) : f64
  %two = llvm.mlir.constant(2.0 : f64) : f64
  %half = llvm.mlir.constant(0.5 : f64) : f64
  %min_normal = llvm.mlir.constant(2.2250738585072014e-308 : f64) : f64
  %two54 = llvm.mlir.constant(18014398509481984.0 : f64) : f64
  %sqrt2 = llvm.mlir.constant(1.4142135623730951 : f64) : f64
  %ln2_hi = llvm.mlir.constant(0.6931471805598903 : f64) : f64
  %ln2_lo = llvm.mlir.constant(5.497923018708371e-14 : f64) : f64
  // u<k> = 2/(2k+3), u0 = 2/3 as a double-double
  %u0_hi = llvm.mlir.constant(0.6666666666666666 : f64) : f64
  %u0_lo = llvm.mlir.constant(3.700743415417188e-17 : f64) : f64
  %u1 = llvm.mlir.constant(0.4 : f64) : f64
  %u2 = llvm.mlir.constant(0.2857142857142857 : f64) : f64
  %u3 = llvm.mlir.constant(0.2222222222222222 : f64) : f64
  %u4 = llvm.mlir.constant(0.18181818181818182 : f64) : f64
  %u5 = llvm.mlir.constant(0.15384615384615385 : f64) : f64
  %u6 = llvm.mlir.constant(0.13333333333333333 : f64) : f64
  %u7 = llvm.mlir.constant(0.11764705882352941 : f64) : f64
  %u8 = llvm.mlir.constant(0.10526315789473684 : f64) : f64
  %u9 = llvm.mlir.constant(0.09523809523809523 : f64) : f64
  %u10 = llvm.mlir.constant(0.08695652173913043 : f64) : f64
  %u11 = llvm.mlir.constant(0.08 : f64) : f64
  %i0 = llvm.mlir.constant(0 : i64) : i64
  %i1 = llvm.mlir.constant(1 : i64) : i64
  %i52 = llvm.mlir.constant(52 : i64) : i64
  %bias = llvm.mlir.constant(1023 : i64) : i64
  %sub_shift = llvm.mlir.constant(-54 : i64) : i64
  %mant_mask = llvm.mlir.constant(4503599627370495 : i64) : i64
  %one_bits = llvm.mlir.constant(4607182418800017408 : i64) : i64
  // x = 2^e m
  %sub = llvm.fcmp "olt" %x, %min_normal : f64
  %x_scaled = llvm.fmul %x, %two54 : f64
  %xs = llvm.select %sub, %x_scaled, %x : i1, f64
  %adj = llvm.select %sub, %sub_shift, %i0 : i1, i64
  %bits = llvm.bitcast %xs : f64 to i64
  %biased = llvm.lshr %bits, %i52 : i64
  %e_raw = llvm.sub %biased, %bias : i64
  %e0 = llvm.add %e_raw, %adj : i64
  %mant = llvm.and %bits, %mant_mask : i64
  %m_bits = llvm.or %mant, %one_bits : i64
  %m0 = llvm.bitcast %m_bits : i64 to f64
  %big = llvm.fcmp "ogt" %m0, %sqrt2 : f64
  %m_half = llvm.fmul %m0, %half : f64
  %m = llvm.select %big, %m_half, %m0 : i1, f64
  %e_up = llvm.add %e0, %i1 : i64
  %e = llvm.select %big, %e_up, %e0 : i1, i64
  %ef = llvm.sitofp %e : i64 to f64
  // s + s_lo = f / (v + v_lo), v + v_lo = 2 + f
  %f = llvm.fsub %m, %one : f64
  %v = llvm.fadd %two, %f : f64
  %v_d = llvm.fsub %two, %v : f64
  %v_lo = llvm.fadd %v_d, %f : f64
  %s = llvm.fdiv %f, %v : f64
  %ns = llvm.fneg %s : f64
  %rem0 = llvm.intr.fma(%ns, %v, %f) : (f64, f64, f64) -> f64
  %rem = llvm.intr.fma(%ns, %v_lo, %rem0) : (f64, f64, f64) -> f64
  %s_lo = llvm.fdiv %rem, %v : f64
  // z + z_lo = s^2, w + w_lo = s^3
  %z = llvm.fmul %s, %s : f64
  %nz = llvm.fneg %z : f64
  %z_e = llvm.intr.fma(%s, %s, %nz) : (f64, f64, f64) -> f64
  %s_slo = llvm.fmul %s, %s_lo : f64
  %z_lo = llvm.intr.fma(%s_slo, %two, %z_e) : (f64, f64, f64) -> f64
  %w = llvm.fmul %s, %z : f64
  %nw = llvm.fneg %w : f64
  %w_e = llvm.intr.fma(%s, %z, %nw) : (f64, f64, f64) -> f64
  %slo_z = llvm.fmul %s_lo, %z : f64
  %w_c = llvm.intr.fma(%s, %z_lo, %slo_z) : (f64, f64, f64) -> f64
  %w_lo = llvm.fadd %w_e, %w_c : f64
  // t1 + t1_lo = w 2/3
  %t1 = llvm.fmul %w, %u0_hi : f64
  %nt1 = llvm.fneg %t1 : f64
  %t1_e = llvm.intr.fma(%w, %u0_hi, %nt1) : (f64, f64, f64) -> f64
  %wlo_u0 = llvm.fmul %w_lo, %u0_hi : f64
  %t1_c = llvm.intr.fma(%w, %u0_lo, %wlo_u0) : (f64, f64, f64) -> f64
  %t1_lo = llvm.fadd %t1_e, %t1_c : f64
  // t2 = w z (u1 + u2 z + ... + u11 z^10)
  %p10 = llvm.intr.fma(%u11, %z, %u10) : (f64, f64, f64) -> f64
  %p9 = llvm.intr.fma(%p10, %z, %u9) : (f64, f64, f64) -> f64
  %p8 = llvm.intr.fma(%p9, %z, %u8) : (f64, f64, f64) -> f64
  %p7 = llvm.intr.fma(%p8, %z, %u7) : (f64, f64, f64) -> f64
  %p6 = llvm.intr.fma(%p7, %z, %u6) : (f64, f64, f64) -> f64
  %p5 = llvm.intr.fma(%p6, %z, %u5) : (f64, f64, f64) -> f64
  %p4 = llvm.intr.fma(%p5, %z, %u4) : (f64, f64, f64) -> f64
  %p3 = llvm.intr.fma(%p4, %z, %u3) : (f64, f64, f64) -> f64
  %p2 = llvm.intr.fma(%p3, %z, %u2) : (f64, f64, f64) -> f64
  %p1 = llvm.intr.fma(%p2, %z, %u1) : (f64, f64, f64) -> f64
  %wz = llvm.fmul %w, %z : f64
  %t2 = llvm.fmul %wz, %p1 : f64
  // log m = a + low: a + a_e = 2s + t1 (Fast2Sum, |t1| < |2s|)
  %s2 = llvm.fmul %s, %two : f64
  %slo2 = llvm.fmul %s_lo, %two : f64
  %a = llvm.fadd %s2, %t1 : f64
  %a_d = llvm.fsub %s2, %a : f64
  %a_e = llvm.fadd %a_d, %t1 : f64
  %low0 = llvm.fadd %slo2, %t1_lo : f64
  %low1 = llvm.fadd %low0, %t2 : f64
  %low = llvm.fadd %low1, %a_e : f64
  // log x = e ln2_hi + a + [low + e ln2_lo], the first sum with TwoSum
  %el_hi = llvm.fmul %ef, %ln2_hi : f64
  %el_lo = llvm.fmul %ef, %ln2_lo : f64
  %sum = llvm.fadd %el_hi, %a : f64
  %sum_t = llvm.fsub %sum, %el_hi : f64
  %sum_u = llvm.fsub %sum, %sum_t : f64
  %sum_ea = llvm.fsub %el_hi, %sum_u : f64
  %sum_eb = llvm.fsub %a, %sum_t : f64
  %sum_e = llvm.fadd %sum_ea, %sum_eb : f64
  %lo0 = llvm.fadd %low, %el_lo : f64
  %lo = llvm.fadd %lo0, %sum_e : f64
  // normalize (Fast2Sum)
  %hi_n = llvm.fadd %sum, %lo : f64
  %hi_d = llvm.fsub %sum, %hi_n : f64
  %lo_n = llvm.fadd %hi_d, %lo : f64
  %undef = llvm.mlir.poison : !llvm.struct<(f64, f64)>
  %pair0 = llvm.insertvalue %hi_n, %undef[0] : !llvm.struct<(f64, f64)>
  %pair = llvm.insertvalue %lo_n, %pair0[1] : !llvm.struct<(f64, f64)>
  llvm.return %pair : !llvm.struct<(f64, f64)>
}

// log(x): the high part of log_dd (its rounding of hi + lo). log(NaN) =
// NaN, log(x < 0) = NaN, log(+-0) = -inf, log(inf) = inf.
llvm.func internal @__pgpu_math_log(%x: f64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %nan = llvm.mlir.constant(0x7FF8000000000000 : f64) : f64
  %inf = llvm.mlir.constant(0x7FF0000000000000 : f64) : f64
  %ninf = llvm.mlir.constant(0xFFF0000000000000 : f64) : f64
  %dd = llvm.call @__pgpu_math_log_dd(%x) : (f64) -> !llvm.struct<(f64, f64)>
  %hi = llvm.extractvalue %dd[0] : !llvm.struct<(f64, f64)>
  %neg = llvm.fcmp "olt" %x, %zero : f64
  %r1 = llvm.select %neg, %nan, %hi : i1, f64
  %is_zero = llvm.fcmp "oeq" %x, %zero : f64
  %r2 = llvm.select %is_zero, %ninf, %r1 : i1, f64
  %is_inf = llvm.fcmp "oeq" %x, %inf : f64
  %r3 = llvm.select %is_inf, %inf, %r2 : i1, f64
  %is_nan = llvm.fcmp "uno" %x, %x : f64
  %quiet = llvm.fadd %x, %x : f64
  %r = llvm.select %is_nan, %quiet, %r3 : i1, f64
  llvm.return %r : f64
}

// pow(x, y) = exp(y log |x|), with y log |x| as a double-double (TwoProd
// of y and log's high part, plus y times its low part) and the sign and
// the special cases of C99 (Annex F.9.4.4) by selects:
//   pow(x, +-0) = 1 and pow(1, y) = 1, even for NaN; otherwise a NaN
//   operand gives NaN; pow(x < 0 finite, y finite non-integer) = NaN;
//   |x| = 0: inf for y < 0, 0 for y > 0; |x| = inf: 0 for y < 0, inf for
//   y > 0; y = +-inf: 1 for |x| = 1, inf for |x| < 1 with y = -inf or
//   |x| > 1 with y = inf, else 0; a negative x (-0 and -inf included) to
//   an odd integer power gives the negated magnitude.
llvm.func internal @__pgpu_math_pow(%x: f64, %y: f64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %one = llvm.mlir.constant(1.0 : f64) : f64
  %half = llvm.mlir.constant(0.5 : f64) : f64
  %inf = llvm.mlir.constant(0x7FF0000000000000 : f64) : f64
  %nan = llvm.mlir.constant(0x7FF8000000000000 : f64) : f64
  %true = llvm.mlir.constant(true) : i1
  %i0 = llvm.mlir.constant(0 : i64) : i64
  %ax = llvm.intr.fabs(%x) : (f64) -> f64
  %dd = llvm.call @__pgpu_math_log_dd(%ax) : (f64) -> !llvm.struct<(f64, f64)>
  %lh = llvm.extractvalue %dd[0] : !llvm.struct<(f64, f64)>
  %ll = llvm.extractvalue %dd[1] : !llvm.struct<(f64, f64)>
  %th = llvm.fmul %y, %lh : f64
  %nth = llvm.fneg %th : f64
  %th_e = llvm.intr.fma(%y, %lh, %nth) : (f64, f64, f64) -> f64
  %tl = llvm.intr.fma(%y, %ll, %th_e) : (f64, f64, f64) -> f64
  %mag0 = llvm.call @__pgpu_math_exp_dd(%th, %tl) : (f64, f64) -> f64
  // y integer, odd integer, infinite, negative
  %ay = llvm.intr.fabs(%y) : (f64) -> f64
  %y_inf = llvm.fcmp "oeq" %ay, %inf : f64
  %y_fin = llvm.fcmp "one" %ay, %inf : f64
  %y_floor = llvm.intr.floor(%y) : (f64) -> f64
  %y_whole = llvm.fcmp "oeq" %y_floor, %y : f64
  %y_int = llvm.and %y_whole, %y_fin : i1
  %y_half = llvm.fmul %y, %half : f64
  %y_half_floor = llvm.intr.floor(%y_half) : (f64) -> f64
  %y_half_frac = llvm.fcmp "one" %y_half_floor, %y_half : f64
  %y_odd = llvm.and %y_int, %y_half_frac : i1
  %y_neg = llvm.fcmp "olt" %y, %zero : f64
  // |x| = 0, |x| = inf
  %zero_mag = llvm.select %y_neg, %inf, %zero : i1, f64
  %ax_zero = llvm.fcmp "oeq" %ax, %zero : f64
  %mag1 = llvm.select %ax_zero, %zero_mag, %mag0 : i1, f64
  %inf_mag = llvm.select %y_neg, %zero, %inf : i1, f64
  %ax_inf = llvm.fcmp "oeq" %ax, %inf : f64
  %mag2 = llvm.select %ax_inf, %inf_mag, %mag1 : i1, f64
  // y = +-inf
  %ax_lt1 = llvm.fcmp "olt" %ax, %one : f64
  %grows = llvm.icmp "eq" %ax_lt1, %y_neg : i1
  %y_inf_mag0 = llvm.select %grows, %inf, %zero : i1, f64
  %ax_one = llvm.fcmp "oeq" %ax, %one : f64
  %y_inf_mag = llvm.select %ax_one, %one, %y_inf_mag0 : i1, f64
  %mag = llvm.select %y_inf, %y_inf_mag, %mag2 : i1, f64
  // sign
  %x_bits = llvm.bitcast %x : f64 to i64
  %x_sign = llvm.icmp "slt" %x_bits, %i0 : i64
  %flip = llvm.and %x_sign, %y_odd : i1
  %nmag = llvm.fneg %mag : f64
  %r0 = llvm.select %flip, %nmag, %mag : i1, f64
  // negative finite x, finite non-integer y
  %x_neg = llvm.fcmp "olt" %x, %zero : f64
  %x_fin = llvm.fcmp "one" %ax, %inf : f64
  %y_not_whole = llvm.xor %y_whole, %true : i1
  %y_frac = llvm.and %y_fin, %y_not_whole : i1
  %x_neg_fin = llvm.and %x_neg, %x_fin : i1
  %domain = llvm.and %x_neg_fin, %y_frac : i1
  %r1 = llvm.select %domain, %nan, %r0 : i1, f64
  // NaN operands
  %any_nan = llvm.fcmp "uno" %x, %y : f64
  %quiet = llvm.fadd %x, %y : f64
  %r2 = llvm.select %any_nan, %quiet, %r1 : i1, f64
  // pow(x, +-0) = pow(1, y) = 1
  %y_zero = llvm.fcmp "oeq" %y, %zero : f64
  %x_one = llvm.fcmp "oeq" %x, %one : f64
  %unit = llvm.or %y_zero, %x_one : i1
  %r = llvm.select %unit, %one, %r2 : i1, f64
  llvm.return %r : f64
}

// The bits of 2/pi after the binary point, 64 to a word, most significant
// first, after one word of zeros: word i holds bits 64i - 63 to 64i (bit 1
// is the first after the point), bit 1217 the last one. Computed with
// 2000-bit arithmetic (2/pi = 0.a2f9836e4e441529fc2757d1f534ddc0... in
// hexadecimal), written as signed i64.
llvm.mlir.global internal constant @__pgpu_math_two_over_pi(dense<[0, -6703182060581546711, -277156292786332224, -2638381946312093631, -121206125134887583, -5249950069107600672, 452944820249399836, -135693905287338178, -1692731182770600828, -1613291254968254911, 4148332274289687028, -7168499653074671557, 2303758334597371919, -1211730484530615009, 7869616827067468215, 5712322887342352941, 8441921394348257659, 4397547296490951402, 7780917995555872008, 6197850593633725355]> : tensor<20xi64>) {addr_space = 0 : i32} : !llvm.array<20 x i64>

// sin(x) for %shift = 0, cos(x) = sin(x + pi/2) for %shift = 1.
//
// Reduction: x = k pi/2 + r, |r| <= pi/4 (plus rounding), r as a
// double-double (rh, rl); the quadrant (k + shift) mod 4 picks sin r, cos
// r, -sin r or -cos r.
// * |x| < 2^30 (Cody-Waite): k = round(x 2/pi), pi/2 = p1 + p2 + p3
//   (each the double nearest to what the ones before leave). x - k p1 is
//   exact (one fma; the result has at most 53 significant bits), k p2 is
//   split exactly with TwoProd, the subtraction with TwoSum, and k p3 and
//   the rounding errors go to rl. The error is below 2^-130 absolute,
//   against |r| above about 2^-60 for doubles this small.
// * |x| >= 2^30 (Payne-Hanek): x = m 2^E, m a 53-bit integer. Bits of
//   2/pi whose weight times 2^E is a multiple of 4 do not change x 2/pi
//   mod 4, so only bits E - 1 onward count: a 192-bit window W of them
//   from the table gives x 2/pi mod 4 = m W 2^-190 mod 4, i.e. the low
//   192 bits of the product m W (three 64-bit words, 128-bit products).
//   The top 2 bits are the quadrant, the next 128 the fraction, taken as
//   a signed number f in [-1/2, 1/2) (rounding the quadrant to nearest);
//   normalized by its leading zeros it becomes the double-double fh + fl
//   and r = f pi/2 (with pi/2 = p1 + p2). The bits past the window change
//   x 2/pi by less than 2^-137, against |f| above about 2^-62 for every
//   double.
// Polynomials, z = rh^2: sin r = rh + rh z (s3 + s5 z + ... + s17 z^7) +
// rl (1 - z/2), Taylor through r^17 (the first term left out, r^19/19!,
// is below 2^-64 of sin r for |r| <= pi/4); cos r = 1 - z/2 + z^2 (c4 +
// c6 z + ... + c16 z^6) - rh rl, Taylor through r^16 (r^18/18! is below
// 2^-58 of cos r), with 1 - rh^2/2 kept exact (TwoProd, Fast2Sum) so the
// sum rounds once. sin and cos of inf and NaN are NaN.
llvm.func internal @__pgpu_math_sin_cos(%x: f64, %shift: i64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %inf = llvm.mlir.constant(0x7FF0000000000000 : f64) : f64
  %two30 = llvm.mlir.constant(1073741824.0 : f64) : f64
  %abs_x = llvm.intr.fabs(%x) : (f64) -> f64
  %finite = llvm.fcmp "olt" %abs_x, %inf : f64
  %xs = llvm.select %finite, %x, %zero : i1, f64
  %axs = llvm.intr.fabs(%xs) : (f64) -> f64
  %large = llvm.fcmp "oge" %axs, %two30 : f64
  llvm.cond_br %large, ^payne_hanek, ^cody_waite
^cody_waite:
  %two_over_pi = llvm.mlir.constant(0.6366197723675814 : f64) : f64
  %p1 = llvm.mlir.constant(1.5707963267948966 : f64) : f64
  %p2 = llvm.mlir.constant(6.123233995736766e-17 : f64) : f64
  %p3 = llvm.mlir.constant(-1.4973849048591698e-33 : f64) : f64
  %t = llvm.fmul %xs, %two_over_pi : f64
  %k = llvm.intr.roundeven(%t) : (f64) -> f64
  %nk = llvm.fneg %k : f64
  %r1 = llvm.intr.fma(%nk, %p1, %xs) : (f64, f64, f64) -> f64
  %t2 = llvm.fmul %k, %p2 : f64
  %nt2 = llvm.fneg %t2 : f64
  %t2_e = llvm.intr.fma(%k, %p2, %nt2) : (f64, f64, f64) -> f64
  // r2 + r2_e = r1 - t2 (TwoSum)
  %r2 = llvm.fsub %r1, %t2 : f64
  %r2_t = llvm.fsub %r2, %r1 : f64
  %r2_u = llvm.fsub %r2, %r2_t : f64
  %r2_ea = llvm.fsub %r1, %r2_u : f64
  %r2_eb = llvm.fsub %nt2, %r2_t : f64
  %r2_e = llvm.fadd %r2_ea, %r2_eb : f64
  %c0 = llvm.fsub %r2_e, %t2_e : f64
  %c = llvm.intr.fma(%nk, %p3, %c0) : (f64, f64, f64) -> f64
  %cw_rh = llvm.fadd %r2, %c : f64
  %cw_d = llvm.fsub %r2, %cw_rh : f64
  %cw_rl = llvm.fadd %cw_d, %c : f64
  %ki = llvm.fptosi %k : f64 to i64
  llvm.br ^poly(%cw_rh, %cw_rl, %ki : f64, f64, i64)
^payne_hanek:
  %ph_p1 = llvm.mlir.constant(1.5707963267948966 : f64) : f64
  %ph_p2 = llvm.mlir.constant(6.123233995736766e-17 : f64) : f64
  %j0 = llvm.mlir.constant(0 : i64) : i64
  %j1 = llvm.mlir.constant(1 : i64) : i64
  %j2 = llvm.mlir.constant(2 : i64) : i64
  %j3 = llvm.mlir.constant(3 : i64) : i64
  %j6 = llvm.mlir.constant(6 : i64) : i64
  %j11 = llvm.mlir.constant(11 : i64) : i64
  %j52 = llvm.mlir.constant(52 : i64) : i64
  %j53 = llvm.mlir.constant(53 : i64) : i64
  %j62 = llvm.mlir.constant(62 : i64) : i64
  %j63 = llvm.mlir.constant(63 : i64) : i64
  %j1075 = llvm.mlir.constant(1075 : i64) : i64
  %low11 = llvm.mlir.constant(2047 : i64) : i64
  %mant_mask = llvm.mlir.constant(4503599627370495 : i64) : i64
  %hidden = llvm.mlir.constant(4503599627370496 : i64) : i64
  %exp_scale1 = llvm.mlir.constant(970 : i64) : i64
  %exp_scale2 = llvm.mlir.constant(906 : i64) : i64
  %w64 = llvm.mlir.constant(64 : i128) : i128
  %w2 = llvm.mlir.constant(2 : i128) : i128
  %w62 = llvm.mlir.constant(62 : i128) : i128
  %w0 = llvm.mlir.constant(0 : i128) : i128
  %w127 = llvm.mlir.constant(127 : i128) : i128
  // |x| = m 2^E
  %bits = llvm.bitcast %axs : f64 to i64
  %biased = llvm.lshr %bits, %j52 : i64
  %big_e = llvm.sub %biased, %j1075 : i64
  %mant = llvm.and %bits, %mant_mask : i64
  %m = llvm.or %mant, %hidden : i64
  // bit E - 1 of 2/pi is bit E + 62 of the table: word kw, bit s
  %pos = llvm.add %big_e, %j62 : i64
  %kw = llvm.lshr %pos, %j6 : i64
  %s = llvm.and %pos, %j63 : i64
  %rs = llvm.sub %j63, %s : i64
  %table = llvm.mlir.addressof @__pgpu_math_two_over_pi : !llvm.ptr
  %a0 = llvm.getelementptr %table[%kw] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  %a1 = llvm.getelementptr %a0[1] : (!llvm.ptr) -> !llvm.ptr, i64
  %a2 = llvm.getelementptr %a0[2] : (!llvm.ptr) -> !llvm.ptr, i64
  %a3 = llvm.getelementptr %a0[3] : (!llvm.ptr) -> !llvm.ptr, i64
  %tw0 = llvm.load %a0 : !llvm.ptr -> i64
  %tw1 = llvm.load %a1 : !llvm.ptr -> i64
  %tw2 = llvm.load %a2 : !llvm.ptr -> i64
  %tw3 = llvm.load %a3 : !llvm.ptr -> i64
  // window word i = (tw_i << s) | (tw_{i+1} >> (64 - s)), the second shift
  // in two steps so that s = 0 needs no shift by 64
  %hi0 = llvm.shl %tw0, %s : i64
  %nx1 = llvm.lshr %tw1, %j1 : i64
  %lo0 = llvm.lshr %nx1, %rs : i64
  %win0 = llvm.or %hi0, %lo0 : i64
  %hi1 = llvm.shl %tw1, %s : i64
  %nx2 = llvm.lshr %tw2, %j1 : i64
  %lo1 = llvm.lshr %nx2, %rs : i64
  %win1 = llvm.or %hi1, %lo1 : i64
  %hi2 = llvm.shl %tw2, %s : i64
  %nx3 = llvm.lshr %tw3, %j1 : i64
  %lo2 = llvm.lshr %nx3, %rs : i64
  %win2 = llvm.or %hi2, %lo2 : i64
  // m W mod 2^192 = words (pw0, pw1, pw2), most significant first
  %m_w = llvm.zext %m : i64 to i128
  %win2_w = llvm.zext %win2 : i64 to i128
  %prod2 = llvm.mul %m_w, %win2_w : i128
  %pw2 = llvm.trunc %prod2 : i128 to i64
  %prod2_hi_w = llvm.lshr %prod2, %w64 : i128
  %prod2_hi = llvm.trunc %prod2_hi_w : i128 to i64
  %win1_w = llvm.zext %win1 : i64 to i128
  %prod1 = llvm.mul %m_w, %win1_w : i128
  %prod1_lo = llvm.trunc %prod1 : i128 to i64
  %prod1_hi_w = llvm.lshr %prod1, %w64 : i128
  %prod1_hi = llvm.trunc %prod1_hi_w : i128 to i64
  %prod0 = llvm.mul %m, %win0 : i64
  %pw1 = llvm.add %prod1_lo, %prod2_hi : i64
  %carry_bit = llvm.icmp "ult" %pw1, %prod1_lo : i64
  %carry = llvm.zext %carry_bit : i1 to i64
  %pw0_a = llvm.add %prod0, %prod1_hi : i64
  %pw0 = llvm.add %pw0_a, %carry : i64
  // quadrant and signed fraction F = f 2^128
  %quadrant0 = llvm.lshr %pw0, %j62 : i64
  %pw0_w = llvm.zext %pw0 : i64 to i128
  %pw1_w = llvm.zext %pw1 : i64 to i128
  %pw2_w = llvm.zext %pw2 : i64 to i128
  %top = llvm.shl %pw0_w, %w64 : i128
  %top2 = llvm.or %top, %pw1_w : i128
  %frac_hi = llvm.shl %top2, %w2 : i128
  %frac_lo = llvm.lshr %pw2_w, %w62 : i128
  %frac = llvm.or %frac_hi, %frac_lo : i128
  %f_neg = llvm.icmp "slt" %frac, %w0 : i128
  %round_up = llvm.zext %f_neg : i1 to i64
  %quadrant1 = llvm.add %quadrant0, %round_up : i64
  %frac_n = llvm.sub %w0, %frac : i128
  %frac_abs = llvm.select %f_neg, %frac_n, %frac : i1, i128
  // |f| = N 2^(-128 - lz), N = |F| << lz in [2^127, 2^128)
  %lz0 = "llvm.intr.ctlz"(%frac_abs) <{is_zero_poison = false}> : (i128) -> i128
  %lz_ok = llvm.icmp "ult" %lz0, %w127 : i128
  %lz = llvm.select %lz_ok, %lz0, %w127 : i1, i128
  %norm = llvm.shl %frac_abs, %lz : i128
  %norm_hi_w = llvm.lshr %norm, %w64 : i128
  %norm_hi = llvm.trunc %norm_hi_w : i128 to i64
  %norm_lo = llvm.trunc %norm : i128 to i64
  %lz_i = llvm.trunc %lz : i128 to i64
  // fh = N[127:75] 2^(-53 - lz) (exact), fl = N[74:11] 2^(-117 - lz)
  %f_top = llvm.lshr %norm_hi, %j11 : i64
  %f_mid0 = llvm.and %norm_hi, %low11 : i64
  %f_mid1 = llvm.shl %f_mid0, %j53 : i64
  %f_mid2 = llvm.lshr %norm_lo, %j11 : i64
  %f_rest = llvm.or %f_mid1, %f_mid2 : i64
  %f_top_f = llvm.uitofp %f_top : i64 to f64
  %f_rest_f = llvm.uitofp %f_rest : i64 to f64
  %sc1_e = llvm.sub %exp_scale1, %lz_i : i64
  %sc1_b = llvm.shl %sc1_e, %j52 : i64
  %sc1 = llvm.bitcast %sc1_b : i64 to f64
  %sc2_e = llvm.sub %exp_scale2, %lz_i : i64
  %sc2_b = llvm.shl %sc2_e, %j52 : i64
  %sc2 = llvm.bitcast %sc2_b : i64 to f64
  %fh = llvm.fmul %f_top_f, %sc1 : f64
  %fl = llvm.fmul %f_rest_f, %sc2 : f64
  // r = (fh + fl)(p1 + p2)
  %rh0 = llvm.fmul %fh, %ph_p1 : f64
  %nrh0 = llvm.fneg %rh0 : f64
  %rh0_e = llvm.intr.fma(%fh, %ph_p1, %nrh0) : (f64, f64, f64) -> f64
  %fl_p1 = llvm.fmul %fl, %ph_p1 : f64
  %rc = llvm.intr.fma(%fh, %ph_p2, %fl_p1) : (f64, f64, f64) -> f64
  %rl0 = llvm.fadd %rh0_e, %rc : f64
  %rh1 = llvm.fadd %rh0, %rl0 : f64
  %rh1_d = llvm.fsub %rh0, %rh1 : f64
  %rl1 = llvm.fadd %rh1_d, %rl0 : f64
  // the signs of f and of x
  %x_neg = llvm.fcmp "olt" %xs, %zero : f64
  %flip = llvm.xor %f_neg, %x_neg : i1
  %nrh1 = llvm.fneg %rh1 : f64
  %nrl1 = llvm.fneg %rl1 : f64
  %ph_rh = llvm.select %flip, %nrh1, %rh1 : i1, f64
  %ph_rl = llvm.select %flip, %nrl1, %rl1 : i1, f64
  %quadrant_n = llvm.sub %j0, %quadrant1 : i64
  %ph_q = llvm.select %x_neg, %quadrant_n, %quadrant1 : i1, i64
  llvm.br ^poly(%ph_rh, %ph_rl, %ph_q : f64, f64, i64)
^poly(%rh: f64, %rl: f64, %k_q: i64):
  %one = llvm.mlir.constant(1.0 : f64) : f64
  %half = llvm.mlir.constant(0.5 : f64) : f64
  %q1 = llvm.mlir.constant(1 : i64) : i64
  %q2 = llvm.mlir.constant(2 : i64) : i64
  %q3 = llvm.mlir.constant(3 : i64) : i64
  %q0 = llvm.mlir.constant(0 : i64) : i64
  // s<n> = (-1)^((n-1)/2) / n!, c<n> = (-1)^(n/2) / n!
  %s3 = llvm.mlir.constant(-0.16666666666666666 : f64) : f64
  %s5 = llvm.mlir.constant(0.008333333333333333 : f64) : f64
  %s7 = llvm.mlir.constant(-1.984126984126984e-04 : f64) : f64
  %s9 = llvm.mlir.constant(2.7557319223985893e-06 : f64) : f64
  %s11 = llvm.mlir.constant(-2.505210838544172e-08 : f64) : f64
  %s13 = llvm.mlir.constant(1.6059043836821613e-10 : f64) : f64
  %s15 = llvm.mlir.constant(-7.647163731819816e-13 : f64) : f64
  %s17 = llvm.mlir.constant(2.8114572543455206e-15 : f64) : f64
  %c4 = llvm.mlir.constant(0.041666666666666664 : f64) : f64
  %c6 = llvm.mlir.constant(-0.001388888888888889 : f64) : f64
  %c8 = llvm.mlir.constant(2.48015873015873e-05 : f64) : f64
  %c10 = llvm.mlir.constant(-2.755731922398589e-07 : f64) : f64
  %c12 = llvm.mlir.constant(2.08767569878681e-09 : f64) : f64
  %c14 = llvm.mlir.constant(-1.1470745597729725e-11 : f64) : f64
  %c16 = llvm.mlir.constant(4.779477332387385e-14 : f64) : f64
  %z = llvm.fmul %rh, %rh : f64
  // sin r
  %ps6 = llvm.intr.fma(%s17, %z, %s15) : (f64, f64, f64) -> f64
  %ps5 = llvm.intr.fma(%ps6, %z, %s13) : (f64, f64, f64) -> f64
  %ps4 = llvm.intr.fma(%ps5, %z, %s11) : (f64, f64, f64) -> f64
  %ps3 = llvm.intr.fma(%ps4, %z, %s9) : (f64, f64, f64) -> f64
  %ps2 = llvm.intr.fma(%ps3, %z, %s7) : (f64, f64, f64) -> f64
  %ps1 = llvm.intr.fma(%ps2, %z, %s5) : (f64, f64, f64) -> f64
  %ps = llvm.intr.fma(%ps1, %z, %s3) : (f64, f64, f64) -> f64
  %hz = llvm.fmul %z, %half : f64
  %nhz = llvm.fneg %hz : f64
  %corr = llvm.intr.fma(%nhz, %rl, %rl) : (f64, f64, f64) -> f64
  %rz = llvm.fmul %rh, %z : f64
  %sin_tail = llvm.intr.fma(%rz, %ps, %corr) : (f64, f64, f64) -> f64
  %sin_r = llvm.fadd %rh, %sin_tail : f64
  // cos r: rh^2/2 = hz + hz_e, 1 - hz = w + w_e
  %pc5 = llvm.intr.fma(%c16, %z, %c14) : (f64, f64, f64) -> f64
  %pc4 = llvm.intr.fma(%pc5, %z, %c12) : (f64, f64, f64) -> f64
  %pc3 = llvm.intr.fma(%pc4, %z, %c10) : (f64, f64, f64) -> f64
  %pc2 = llvm.intr.fma(%pc3, %z, %c8) : (f64, f64, f64) -> f64
  %pc1 = llvm.intr.fma(%pc2, %z, %c6) : (f64, f64, f64) -> f64
  %pc = llvm.intr.fma(%pc1, %z, %c4) : (f64, f64, f64) -> f64
  %half_rh = llvm.fmul %rh, %half : f64
  %hz_e = llvm.intr.fma(%half_rh, %rh, %nhz) : (f64, f64, f64) -> f64
  %w = llvm.fsub %one, %hz : f64
  %w_d = llvm.fsub %one, %w : f64
  %w_e = llvm.fsub %w_d, %hz : f64
  %zz = llvm.fmul %z, %z : f64
  %rh_rl = llvm.fmul %rh, %rl : f64
  %nrh_rl = llvm.fneg %rh_rl : f64
  %cos_poly = llvm.intr.fma(%zz, %pc, %nrh_rl) : (f64, f64, f64) -> f64
  %cos_errs = llvm.fsub %w_e, %hz_e : f64
  %cos_tail = llvm.fadd %cos_errs, %cos_poly : f64
  %cos_r = llvm.fadd %w, %cos_tail : f64
  // quadrant
  %quadrant_s = llvm.add %k_q, %shift : i64
  %quadrant = llvm.and %quadrant_s, %q3 : i64
  %odd_bit = llvm.and %quadrant, %q1 : i64
  %odd = llvm.icmp "ne" %odd_bit, %q0 : i64
  %v = llvm.select %odd, %cos_r, %sin_r : i1, f64
  %neg_bit = llvm.and %quadrant, %q2 : i64
  %neg = llvm.icmp "ne" %neg_bit, %q0 : i64
  %nv = llvm.fneg %v : f64
  %res0 = llvm.select %neg, %nv, %v : i1, f64
  %invalid = llvm.fsub %x, %x : f64
  %res = llvm.select %finite, %res0, %invalid : i1, f64
  llvm.return %res : f64
}

// sin(x); sin(+-0) = +-0.
llvm.func internal @__pgpu_math_sin(%x: f64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %shift = llvm.mlir.constant(0 : i64) : i64
  %r = llvm.call @__pgpu_math_sin_cos(%x, %shift) : (f64, i64) -> f64
  %is_zero = llvm.fcmp "oeq" %x, %zero : f64
  %res = llvm.select %is_zero, %x, %r : i1, f64
  llvm.return %res : f64
}

// cos(x).
llvm.func internal @__pgpu_math_cos(%x: f64) -> f64 {
  %shift = llvm.mlir.constant(1 : i64) : i64
  %r = llvm.call @__pgpu_math_sin_cos(%x, %shift) : (f64, i64) -> f64
  llvm.return %r : f64
}

// fmod(x, y) (also LLVM's frem), exact: with |x| = mx 2^(ex - 1075) and
// |y| = my 2^(ey - 1075) (mx, my < 2^53; subnormals have exponent field
// 1 and no hidden bit), |x| mod |y| = ((mx 2^(ex - ey)) mod my) 2^(ey -
// 1075): the remainder of mx mod my, shifted left by up to 11 bits at a
// time (it stays below 2^64) and reduced again, ex - ey <= 2046 bits in
// all. The result is representable, so scaling it back (in two steps, so
// that none underflows) is exact; it has the sign of x. fmod(x, y) = x
// for |x| < |y| (y = inf included); NaN for x infinite, y zero or a NaN
// operand.
llvm.func internal @__pgpu_math_fmod(%x: f64, %y: f64) -> f64 {
  %zero = llvm.mlir.constant(0.0 : f64) : f64
  %inf = llvm.mlir.constant(0x7FF0000000000000 : f64) : f64
  %nan = llvm.mlir.constant(0x7FF8000000000000 : f64) : f64
  %i0 = llvm.mlir.constant(0 : i64) : i64
  %i1 = llvm.mlir.constant(1 : i64) : i64
  %i52 = llvm.mlir.constant(52 : i64) : i64
  %mant_mask = llvm.mlir.constant(4503599627370495 : i64) : i64
  %hidden = llvm.mlir.constant(4503599627370496 : i64) : i64
  %ax = llvm.intr.fabs(%x) : (f64) -> f64
  %ay = llvm.intr.fabs(%y) : (f64) -> f64
  %any_nan = llvm.fcmp "uno" %x, %y : f64
  %x_inf = llvm.fcmp "oeq" %ax, %inf : f64
  %y_zero = llvm.fcmp "oeq" %ay, %zero : f64
  %invalid0 = llvm.or %any_nan, %x_inf : i1
  %invalid = llvm.or %invalid0, %y_zero : i1
  %keep = llvm.fcmp "olt" %ax, %ay : f64
  %skip = llvm.or %invalid, %keep : i1
  %xb = llvm.bitcast %ax : f64 to i64
  %yb = llvm.bitcast %ay : f64 to i64
  %ex_f = llvm.lshr %xb, %i52 : i64
  %ey_f = llvm.lshr %yb, %i52 : i64
  %xm = llvm.and %xb, %mant_mask : i64
  %ym = llvm.and %yb, %mant_mask : i64
  %x_normal = llvm.icmp "ne" %ex_f, %i0 : i64
  %y_normal = llvm.icmp "ne" %ey_f, %i0 : i64
  %xm_h = llvm.or %xm, %hidden : i64
  %ym_h = llvm.or %ym, %hidden : i64
  %mx = llvm.select %x_normal, %xm_h, %xm : i1, i64
  %my0 = llvm.select %y_normal, %ym_h, %ym : i1, i64
  %ex = llvm.select %x_normal, %ex_f, %i1 : i1, i64
  %ey = llvm.select %y_normal, %ey_f, %i1 : i1, i64
  // skipped cases: no division by zero, no steps
  %my = llvm.select %skip, %i1, %my0 : i1, i64
  %d0 = llvm.sub %ex, %ey : i64
  %d = llvm.select %skip, %i0, %d0 : i1, i64
  %r0 = llvm.urem %mx, %my : i64
  llvm.br ^loop(%r0, %d : i64, i64)
^loop(%r: i64, %left: i64):
  %l0 = llvm.mlir.constant(0 : i64) : i64
  %more = llvm.icmp "sgt" %left, %l0 : i64
  llvm.cond_br %more, ^step, ^done
^step:
  %l11 = llvm.mlir.constant(11 : i64) : i64
  %few = llvm.icmp "slt" %left, %l11 : i64
  %bits_now = llvm.select %few, %left, %l11 : i1, i64
  %shifted = llvm.shl %r, %bits_now : i64
  %r_next = llvm.urem %shifted, %my : i64
  %left_next = llvm.sub %left, %bits_now : i64
  llvm.br ^loop(%r_next, %left_next : i64, i64)
^done:
  %d1 = llvm.mlir.constant(1 : i64) : i64
  %d52 = llvm.mlir.constant(52 : i64) : i64
  %bias = llvm.mlir.constant(1023 : i64) : i64
  %unbias = llvm.mlir.constant(1075 : i64) : i64
  %rf = llvm.uitofp %r : i64 to f64
  %n = llvm.sub %ey, %unbias : i64
  %n1 = llvm.ashr %n, %d1 : i64
  %n2 = llvm.sub %n, %n1 : i64
  %e1 = llvm.add %n1, %bias : i64
  %b1 = llvm.shl %e1, %d52 : i64
  %s1 = llvm.bitcast %b1 : i64 to f64
  %e2 = llvm.add %n2, %bias : i64
  %b2 = llvm.shl %e2, %d52 : i64
  %s2 = llvm.bitcast %b2 : i64 to f64
  %mag1 = llvm.fmul %rf, %s1 : f64
  %mag = llvm.fmul %mag1, %s2 : f64
  %signed = llvm.intr.copysign(%mag, %x) : (f64, f64) -> f64
  %res0 = llvm.select %keep, %x, %signed : i1, f64
  %quiet = llvm.fadd %x, %y : f64
  %nan_res = llvm.select %any_nan, %quiet, %nan : i1, f64
  %res = llvm.select %invalid, %nan_res, %res0 : i1, f64
  llvm.return %res : f64
}
