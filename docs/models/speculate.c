// Loop speculation (docs/models.md): the loop means what it means run
// sequentially. Iteration i reads an element that an earlier iteration
// may have written (a dependence to respect) or that a later one will
// write (whose old value it must see); which, only the run knows.
int A[4096];
int idx[4096];

int main() {
  int n = argi(0, 4096);
  if (n > 4096) n = 4096;
  for (int i = 0; i < n; i++) {
    A[i] = i;
    idx[i] = (i * 37 + 11) % n;
  }
#pragma pgpu speculate
  for (int i = 0; i < n; i++) {
    A[i] = (A[idx[i]] * 3 + i) % 1000003;
  }
  long sum = 0;
  for (int i = 0; i < n; i++) sum = sum + (long)A[i] * (long)(i % 13 + 1);
  printf("A[1] = %d, A[n-1] = %d, checksum %ld\n", A[1], A[n - 1], sum);
  return 0;
}
