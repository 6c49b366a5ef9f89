// Sequential reference for histogram: count directly.
int counts[1000];

int main() {
  int n = argi(0, 1000);
  int bins = argi(1, 16);
  rand_seed(3);
  for (int b = 0; b < bins; b++)
    counts[b] = 0;
  for (int i = 0; i < n; i++)
    counts[(int)(rand_u32() % 1000u) % bins]++;
  long total = 0;
  for (int b = 0; b < bins; b++) {
    printf("bin %2d: %d\n", b, counts[b]);
    total += (long)counts[b];
  }
  printf("total %ld\n", total);
  return 0;
}
