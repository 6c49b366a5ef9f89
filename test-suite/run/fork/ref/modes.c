// Sequential reference of examples/fork/modes.fork.
int data[4096];
int b[4096];
int c[4096];
int partial[1024];
int sum;
int rounds;

void mirror(int n) {
  for (int i = 0; i < n; i++) b[i] = data[i] * 2;
  for (int i = 0; i < n; i++) c[i] = b[i] + b[n - 1 - i];
}

void report(int p, int n) {
  for (int me = 0; me < p; me++) {
    int s = 0;
    for (int i = me; i < n; i = i + p) s = s + c[i];
    partial[me] = sum;
    sum = sum + s;
  }
  printf("group of %d: sum %d\n", p, sum);
  rounds = rounds + 1;
}

int main() {
  int p = argi(0, 6);
  int n = argi(1, 40);
  if (p > 1024) p = 1024;
  if (p < 2) p = 2;
  if (n > 4096) n = 4096;
  for (int i = 0; i < n; i++) data[i] = (i * i + 3) % 17;
  sum = 0;
  mirror(n);
  for (int me = 0; me < p; me++) {
    int mine = 0;
    for (int i = me; i < n; i = i + p) mine = mine + 1;
    c[me] = c[me] + mine * 1000;
  }
  report(p, n);
  printf("c:");
  for (int i = 0; i < n; i++) printf(" %d", c[i]);
  printf("\n");
  int q = p / 2;
  sum = 0;
  for (int i = 0; i < n; i++) data[i] = c[i] % 7;
  mirror(n);
  report(q, n);
  printf("rounds %d\n", rounds);
  for (int i = 0; i < p && i < 8; i++) printf("partial[%d] = %d\n", i, partial[i]);
  return 0;
}
