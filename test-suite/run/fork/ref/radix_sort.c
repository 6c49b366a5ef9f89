// Sequential reference of examples/fork/radix_sort_*.fork: the same input
// (rand_seed/rand_u32, N and P clamped the same way), sorted another way
// (a counting sort over the 65536 key values), the same checksum.
int keys[4096];
int count[65536];

int main() {
  int n = argi(0, 1000);
  int p = argi(1, 64);
  if (n > 4096) n = 4096;
  if (n < 0) n = 0;
  if (p > 256) p = 256;
  if (p < 1) p = 1;
  rand_seed(argi(2, 7));
  for (int i = 0; i < n; i++) count[rand_u32() % 65536]++;
  int next = 0;
  for (int v = 0; v < 65536; v++) {
    for (int c = 0; c < count[v]; c++) {
      keys[next] = v;
      next++;
    }
  }
  unsigned sum = 0;
  int sorted = 1;
  for (int i = 0; i < n; i++) {
    sum = sum * 31 + keys[i];
    if (i > 0 && keys[i - 1] > keys[i]) sorted = 0;
  }
  printf("n %d p %d checksum %u sorted %d\n", n, p, sum, sorted);
  return 0;
}
