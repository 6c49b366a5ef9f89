// Sequential reference of examples/fork/sieve.fork.
int flags[100001];

int main() {
  int n = argi(0, 100);
  if (n > 100000) n = 100000;
  for (int i = 0; i <= n; i++) flags[i] = 1;
  for (int k = 2; k * k <= n; k++) {
    for (int m = k * k; m <= n; m = m + k) flags[m] = 0;
  }
  int count = 0;
  for (int i = 2; i <= n; i++) {
    if (flags[i]) count++;
  }
  printf("primes up to %d: %d\n", n, count);
  int last = 0;
  for (int i = 2; i <= n; i++) {
    if (flags[i]) last = i;
  }
  printf("largest %d\n", last);
  return 0;
}
