// Sequential reference of examples/fork/parallel_merge.fork: the same
// inputs, merged by one pass (x first among equal keys).
int x[4096];
int y[4096];
int z[8192];

int main() {
  int n = argi(0, 50);
  int m = argi(1, 70);
  if (n > 4096) n = 4096;
  if (m > 4096) m = 4096;
  rand_seed(argi(3, 1));
  int v = 0;
  for (int i = 0; i < n; i++) {
    v = v + rand_u32() % 4;
    x[i] = v;
  }
  v = 0;
  for (int j = 0; j < m; j++) {
    v = v + rand_u32() % 5;
    y[j] = v;
  }
  int i = 0;
  int j = 0;
  for (int k = 0; k < n + m; k++) {
    if (j >= m || (i < n && x[i] <= y[j])) {
      z[k] = x[i];
      i++;
    } else {
      z[k] = y[j];
      j++;
    }
  }
  unsigned sum = 0;
  int sorted = 1;
  for (int k = 0; k < n + m; k++) {
    sum = sum * 31 + z[k];
    if (k > 0 && z[k - 1] > z[k]) sorted = 0;
  }
  printf("n %d m %d checksum %u sorted %d\n", n, m, sum, sorted);
  for (int k = 0; k < n + m && k < 12; k++) printf("%d ", z[k]);
  printf("\n");
  return 0;
}
