// Sequential reference of examples/fork/bisection.fork: the group of a
// call is a frame of per-member salts and results (rank order) on a stack,
// its children's frames above it; mpadd is a running sum in rank order and
// the concurrent write keeps rank 0's value.
int a[4096];
int sums[4096];
int mark[4096];
int leaf[4096];
int res[1024];
int salts[16384];
int outs[16384];

void bisect(int lo, int hi, int p, int base) {
  int n = hi - lo;
  int run = sums[lo];
  for (int k = 0; k < p; k++) {
    int s = 0;
    for (int i = lo + k; i < hi; i = i + p) s = s + a[i];
    outs[base + k] = run;
    run = run + s + salts[base + k];
  }
  sums[lo] = run;
  mark[lo] = salts[base];
  if (p == 1 || n < 2) {
    leaf[lo] = leaf[lo] + 1;
    for (int k = 0; k < p; k++) outs[base + k] = outs[base + k] + mark[lo];
  } else {
    int mid = lo + n / 2;
    int half = p / 2;
    int child = base + p;
    for (int k = 0; k < half; k++) salts[child + k] = salts[base + k] * 3 + 1;
    bisect(lo, mid, half, child);
    for (int k = 0; k < half; k++) outs[base + k] = outs[child + k] + outs[base + k];
    for (int k = half; k < p; k++) salts[child + k - half] = salts[base + k] + k;
    bisect(mid, hi, p - half, child);
    for (int k = half; k < p; k++) outs[base + k] = outs[child + k - half] - outs[base + k];
  }
}

int main() {
  int n = argi(0, 1000);
  int p = argi(1, 64);
  if (n > 4096) n = 4096;
  if (n < 1) n = 1;
  if (p > 1024) p = 1024;
  if (p < 1) p = 1;
  for (int i = 0; i < n; i++) a[i] = (i * 37 + 11) % 101;
  for (int k = 0; k < p; k++) salts[k] = k % 5;
  bisect(0, n, p, 0);
  for (int k = 0; k < p; k++) res[k] = outs[k];
  unsigned results = 0;
  for (int k = 0; k < p; k++) results = results * 31 + res[k];
  int leaves = 0;
  unsigned sum_hash = 0;
  unsigned mark_hash = 0;
  for (int i = 0; i < n; i++) {
    leaves = leaves + leaf[i];
    sum_hash = sum_hash * 31 + sums[i];
    mark_hash = mark_hash * 31 + mark[i];
  }
  printf("n %d p %d results %u sums %u marks %u leaves %d\n", n, p, results, sum_hash, mark_hash, leaves);
  return 0;
}
