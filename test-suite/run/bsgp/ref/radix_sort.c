// Sequential reference for radix_sort: the same keys sorted by a bottom-up
// merge sort; the zeros-top count is taken from the keys directly.
unsigned keys[100000];
unsigned tmp[100000];

// Merges the sorted runs a[lo..mid) and a[mid..hi) into b[lo..hi).
void merge(unsigned* a, unsigned* b, int lo, int mid, int hi) {
  int i = lo;
  int j = mid;
  for (int k = lo; k < hi; k++) {
    if (i < mid && (j >= hi || a[i] <= a[j])) {
      b[k] = a[i];
      i++;
    } else {
      b[k] = a[j];
      j++;
    }
  }
}

int main() {
  int n = argi(0, 1000);
  int bits = argi(1, 12);
  rand_seed(23);
  unsigned mask = (1u << (unsigned)bits) - 1u;
  unsigned top = 1u << (unsigned)(bits - 1);
  int zerosTop = 0;
  for (int i = 0; i < n; i++) {
    keys[i] = rand_u32() & mask;
    if ((keys[i] & top) == 0u)
      zerosTop++;
  }
  unsigned* a = keys;
  unsigned* b = tmp;
  for (int width = 1; width < n; width = width * 2) {
    for (int lo = 0; lo < n; lo = lo + 2 * width) {
      int mid = lo + width < n ? lo + width : n;
      int hi = lo + 2 * width < n ? lo + 2 * width : n;
      merge(a, b, lo, mid, hi);
    }
    unsigned* t = a;
    a = b;
    b = t;
  }
  long sum = 0;
  for (int i = 0; i < n; i++)
    sum += (long)a[i] * (long)(i % 7 + 1);
  printf("n %d bits %d checksum %ld min %u max %u zeros-top %d\n", n, bits, sum,
         a[0], a[n - 1], zerosTop);
  printf("inversions %d disagreements %d mismatches %d\n", 0, 0, 0);
  return 0;
}
