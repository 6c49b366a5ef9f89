// The synthetic loop of seeds/gpu-tls.txt (Figure 4): iteration i reads
// Sr elements of A and writes Sw through the subscript arrays r and w, with
// M units of work per write, so dependences are known only at run time.
// Arguments: N, Sw, Sr, M, the dependence pattern (0 none, 1 RAW, 2 WAR,
// 3 WAW, 4 every iteration depends on the one before), the share of
// iterations (in 1/1000) with a dependence, and a seed. Without
// dependences iteration i writes cells i * Sw + j and reads cells of a
// region nobody writes; a RAW iteration reads a cell an earlier iteration
// writes, a WAR one writes a cell an earlier iteration reads, a WAW one
// writes a cell an earlier iteration writes. Prints a checksum of A.
double A[1048576];
int r[524288];
int w[524288];

double func(double v, int m) {
  for (int k = 0; k < m; k++) v = v * 0.999 + 0.5;
  return v;
}

int main() {
  int n = argi(0, 1024);
  int sw = argi(1, 5);
  int sr = argi(2, 5);
  int m = argi(3, 10);
  int pattern = argi(4, 0);
  int share = argi(5, 10);
  rand_seed(argi(6, 7));
  if (n * sw > 524288) n = 524288 / sw;
  if (n * sr > 524288) n = 524288 / sr;
  int cells = n * sw + n * sr;
  int s = sw;
  if (sr > s) s = sr;
  int reads = n * sw;
  for (int c = 0; c < cells; c++) A[c] = (c % 97) * 0.25;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < sw; j++) w[i * sw + j] = i * sw + j;
    for (int j = 0; j < sr; j++) r[i * sr + j] = reads + i * sr + j;
  }
  for (int i = 1; i < n; i++) {
    int picked = pattern == 4 || rand_u32() % 1000 < share;
    if (picked && pattern > 0) {
      int earlier = i - 1;
      if (pattern != 4) earlier = rand_u32() % i;
      if (pattern == 1 || pattern == 4) r[i * sr] = w[earlier * sw + sw - 1];
      if (pattern == 2) w[i * sw] = r[earlier * sr + sr - 1];
      if (pattern == 3) w[i * sw] = w[earlier * sw];
    }
  }
#pragma pgpu speculate
  for (int i = 0; i < n; i++) {
    double temp = 0.0;
    for (int j = 0; j < s; j++) {
      if (j < sr) temp = A[r[i * sr + j]];
      if (j < sw) A[w[i * sw + j]] = func(temp, m);
    }
  }
  double sum = 0.0;
  for (int c = 0; c < cells; c++) sum += A[c] * (c % 13 + 1);
  printf("synthetic n %d sw %d sr %d m %d pattern %d checksum %.6f\n", n, sw, sr, m, pattern, sum);
  return 0;
}
