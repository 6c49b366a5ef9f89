#!/usr/bin/env python3
"""Independent reference for examples/speculate/blackscholes.c.

Usage: blackscholes.py OPTIONS SEED WRONG OUTPUT_FILE

Recomputes what the program prints for its arguments (the same SplitMix64
stream as pgpu.rand_u32, the same inputs, PARSEC's CNDF and
BlkSchlsEqEuroNoDiv, the put-call-parity reference prices and the error
count) and compares it with the program's output line: the option count
and numOfErrors exactly, the checksum and prices to a relative 1e-9. It
also checks that the CNDF prices are Black-Scholes prices: as close to
the closed form with the exact normal distribution (math.erf) as CNDF's
error bound allows.
Prints "blackscholes reference: ok" or the difference, exit status 1.
"""

import math
import re
import sys

MASK = (1 << 64) - 1
state = 0


def rand_seed(seed):
    global state
    state = seed & MASK


def rand_u32():
    global state
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z = z ^ (z >> 31)
    return z >> 32


def cndf(x):
    sign = False
    if x < 0.0:
        x = -x
        sign = True
    nprime = math.exp(-0.5 * x * x) * 0.39894228040143270286
    k = 1.0 / (1.0 + 0.2316419 * x)
    k2 = k * k
    k3 = k2 * k
    k4 = k3 * k
    k5 = k4 * k
    local2 = k2 * -0.356563782 + k3 * 1.781477937
    local2 = local2 + k4 * -1.821255978
    local2 = local2 + k5 * 1.330274429
    local1 = local2 + k * 0.319381530
    n = 1.0 - local1 * nprime
    if sign:
        n = 1.0 - n
    return n


def black_scholes(s, k, r, v, t, kind, cdf=cndf):
    sqrt_t = math.sqrt(t)
    d1 = (math.log(s / k) + (r + v * v * 0.5) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    nd1 = cdf(d1)
    nd2 = cdf(d2)
    future = k * math.exp(-r * t)
    if kind == 0:
        return s * nd1 - future * nd2
    return future * (1.0 - nd2) - s * (1.0 - nd1)


def exact_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def expected(options, seed, wrong):
    options = min(options, 65536)
    rand_seed(seed)
    inputs = []
    for _ in range(options):
        s = 50.0 + (rand_u32() % 10000) / 100.0
        k = 50.0 + (rand_u32() % 10000) / 100.0
        r = 0.01 + (rand_u32() % 1000) / 10000.0
        v = 0.05 + (rand_u32() % 6000) / 10000.0
        t = 0.1 + (rand_u32() % 1900) / 1000.0
        kind = rand_u32() % 2
        inputs.append((s, k, r, v, t, kind))
    reference = []
    for s, k, r, v, t, kind in inputs:
        other = black_scholes(s, k, r, v, t, 1 - kind)
        parity = s - k * math.exp(-r * t)
        ref = other + parity if kind == 0 else other - parity
        if rand_u32() % 1000 < wrong:
            ref = ref + 0.01
        reference.append(ref)
    errors = 0
    prices = []
    for (s, k, r, v, t, kind), ref in zip(inputs, reference):
        price = black_scholes(s, k, r, v, t, kind)
        exact = black_scholes(s, k, r, v, t, kind, exact_cdf)
        # N(x) is off by less than 7.5e-8, the price by less than that
        # times S + K exp(-rT).
        if abs(price - exact) >= 7.5e-8 * (s + k):
            sys.exit(f"CNDF price {price} is not the Black-Scholes price {exact}")
        prices.append(price)
        if abs(ref - price) >= 1e-4:
            errors += 1
    checksum = 0.0
    for i, price in enumerate(prices):
        checksum += price * (i % 5 + 1)
    return options, checksum, prices[0], prices[1], errors


def main():
    options, seed, wrong = (int(a) for a in sys.argv[1:4])
    with open(sys.argv[4]) as f:
        text = f.read()
    m = re.search(
        r"blackscholes options (\d+) checksum (\S+) price0 (\S+) price1 (\S+) numOfErrors (\d+)",
        text,
    )
    if not m:
        sys.exit(f"no blackscholes line in the output: {text!r}")
    got = (int(m[1]), float(m[2]), float(m[3]), float(m[4]), int(m[5]))
    want = expected(options, seed, wrong)
    ok = got[0] == want[0] and got[4] == want[4]
    ok = ok and all(math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-9) for g, w in zip(got[1:4], want[1:4]))
    if not ok:
        print(f"blackscholes reference: got {got}, expected {want}")
        sys.exit(1)
    print(f"blackscholes reference: ok ({want[4]} errors)")


if __name__ == "__main__":
    main()
