// The Black-Scholes loop of seeds/gpu-tls.txt (Section IV.B, blackscholes
// of the Intel RMS benchmarks, as in PARSEC): iteration i prices European
// option i analytically with the cumulative normal distribution, stores the
// price in prices[i] and compares it with a reference price; a mismatch
// increments the shared scalar numOfErrors. Only iterations that find an
// error write numOfErrors, so the speculation is that no error appears.
// The reference prices come from put-call parity (a call's reference is the
// put's price plus S - K exp(-rT), a put's the call's minus it), and a
// share of them is made wrong on purpose: each wrong one is an error, and a
// dependence between the iterations that find errors.
// Arguments: NumOptions, seed, and the share (in 1/1000) of wrong
// reference prices. Prints a checksum of the prices, the first prices and
// numOfErrors.
double sptprice[65536];
double strike[65536];
double rate[65536];
double volatility[65536];
double otime[65536];
int otype[65536];
double reference[65536];
double prices[65536];

// The cumulative normal distribution N(x), PARSEC's CNDF: the polynomial
// approximation of Abramowitz and Stegun (26.2.17), |error| < 7.5e-8.
double CNDF(double x) {
  int sign = 0;
  if (x < 0.0) {
    x = -x;
    sign = 1;
  }
  double nprime = exp(-0.5 * x * x) * 0.39894228040143270286;
  double k = 1.0 / (1.0 + 0.2316419 * x);
  double k2 = k * k;
  double k3 = k2 * k;
  double k4 = k3 * k;
  double k5 = k4 * k;
  double local2 = k2 * -0.356563782 + k3 * 1.781477937;
  local2 = local2 + k4 * -1.821255978;
  local2 = local2 + k5 * 1.330274429;
  double local1 = local2 + k * 0.319381530;
  double n = 1.0 - local1 * nprime;
  if (sign) n = 1.0 - n;
  return n;
}

// PARSEC's BlkSchlsEqEuroNoDiv: the price of a European call (type 0) or
// put (type 1) on a stock without dividends.
double BlkSchlsEqEuroNoDiv(double s, double k, double r, double v, double t, int type) {
  double sqrt_t = sqrt(t);
  double d1 = (log(s / k) + (r + v * v * 0.5) * t) / (v * sqrt_t);
  double d2 = d1 - v * sqrt_t;
  double nd1 = CNDF(d1);
  double nd2 = CNDF(d2);
  double future = k * exp(-r * t);
  if (type == 0) return s * nd1 - future * nd2;
  return future * (1.0 - nd2) - s * (1.0 - nd1);
}

int main() {
  int options = argi(0, 4096);
  rand_seed(argi(1, 7));
  int wrong = argi(2, 0);
  if (options > 65536) options = 65536;
  for (int i = 0; i < options; i++) {
    sptprice[i] = 50.0 + (rand_u32() % 10000) / 100.0;
    strike[i] = 50.0 + (rand_u32() % 10000) / 100.0;
    rate[i] = 0.01 + (rand_u32() % 1000) / 10000.0;
    volatility[i] = 0.05 + (rand_u32() % 6000) / 10000.0;
    otime[i] = 0.1 + (rand_u32() % 1900) / 1000.0;
    otype[i] = rand_u32() % 2;
  }
  for (int i = 0; i < options; i++) {
    double other = BlkSchlsEqEuroNoDiv(sptprice[i], strike[i], rate[i], volatility[i], otime[i], 1 - otype[i]);
    double parity = sptprice[i] - strike[i] * exp(-rate[i] * otime[i]);
    if (otype[i] == 0) reference[i] = other + parity;
    else reference[i] = other - parity;
    if (rand_u32() % 1000 < wrong) reference[i] = reference[i] + 0.01;
  }
  int numOfErrors = 0;
#pragma pgpu speculate
  for (int i = 0; i < options; i++) {
    double price = BlkSchlsEqEuroNoDiv(sptprice[i], strike[i], rate[i], volatility[i], otime[i], otype[i]);
    prices[i] = price;
    if (fabs(reference[i] - price) >= 1e-4) numOfErrors++;
  }
  double sum = 0.0;
  for (int i = 0; i < options; i++) sum += prices[i] * (i % 5 + 1);
  printf("blackscholes options %d checksum %.9f price0 %.9f price1 %.9f numOfErrors %d\n", options, sum, prices[0], prices[1], numOfErrors);
  return 0;
}
