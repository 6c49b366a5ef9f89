// Sequential reference of examples/fork/prefix_mpadd.fork.
int x[1024];

int main() {
  int p = argi(0, 10);
  if (p > 1024) p = 1024;
  for (int i = 0; i < p; i++) x[i] = (i * 7 + 3) % 11;
  int sum = 0;
  int mx = 0;
  for (int i = 0; i < p; i++) {
    int m = mx;
    printf("%d: x %d prefix %d max-before %d\n", i, x[i], sum, m);
    sum = sum + x[i];
    if (x[i] > mx) mx = x[i];
  }
  printf("sum %d max %d winner %d\n", sum, mx, 1);
  return 0;
}
