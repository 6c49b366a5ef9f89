// Sequential reference of examples/fork/quicksort.fork: the same input
// (rand_seed/rand_u32), a sequential quicksort, the same checksum.
int a[100000];

void qs(int lo, int hi) {
  while (hi - lo > 16) {
    int pivot = a[lo + (hi - lo) / 2];
    int i = lo;
    int j = hi - 1;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    qs(lo, j + 1);
    lo = i;
  }
  for (int i = lo + 1; i < hi; i++) {
    int v = a[i];
    int j = i - 1;
    while (j >= lo && a[j] > v) {
      a[j + 1] = a[j];
      j = j - 1;
    }
    a[j + 1] = v;
  }
}

int main() {
  int n = argi(0, 1000);
  if (n > 100000) n = 100000;
  rand_seed(argi(2, 7));
  for (int i = 0; i < n; i++) a[i] = rand_u32() % 1000;
  qs(0, n);
  unsigned sum = 0;
  int sorted = 1;
  for (int i = 0; i < n; i++) {
    sum = sum * 31 + a[i];
    if (i > 0 && a[i - 1] > a[i]) sorted = 0;
  }
  printf("n %d checksum %u sorted %d\n", n, sum, sorted);
  return 0;
}
