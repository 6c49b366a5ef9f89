// Sequential reference for listing8_par_sort_idx: sort_idx by a stable
// insertion sort of ranks by key.
int keyA[10000];
int keyB[10000];
int idxA[10000];
int idxB[10000];

void sortIndex(int* key, int* idx, int n) {
  for (int i = 0; i < n; i++) {
    int j = i;
    while (j > 0 && key[idx[j - 1]] > key[i]) {
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = i;
  }
}

int main() {
  int n = argi(0, 300);
  for (int r = 0; r < n; r++) {
    keyA[r] = (r * 7919 + 13) % 101;
    keyB[r] = (n - r) % 17;
  }
  sortIndex(keyA, idxA, n);
  sortIndex(keyB, idxB, n);
  long a = 0;
  long b = 0;
  for (int i = 0; i < n; i++) {
    a += (long)idxA[i] * (long)(i + 1);
    b += (long)idxB[i] * (long)(i % 7 + 1);
  }
  printf("n %d idxA-checksum %ld idxB-checksum %ld\n", n, a, b);
  return 0;
}
