// Sequential reference for examples/fork/figure5.fork: the loops step by
// step; in step i every processor still in the loop writes its element.
int a[24];
int first[24];
int second[24];

int main() {
  for (int p = 0; p < 8; p++) a[p + 16] = -1;
  for (int i = 0; i < 10; i++) {
    for (int p = 0; p < 8; p++) a[p + i] = p;
  }
  for (int p = 0; p < 8; p++) {
    first[p] = a[p];
    first[p + 16] = a[p + 16];
  }
  int steps = 0;
  for (int i = 0; i < 8; i++) {
    for (int p = 0; p < 8; p++) {
      // Processor p runs steps 0 .. max(p, 1) - 1 (a do-while loop).
      if (i == 0 || i < p) {
        a[p + i] = p * 100 + i;
        steps = i;
      }
    }
  }
  for (int p = 0; p < 8; p++) {
    second[p] = a[p];
    second[p + 16] = a[p + 16];
  }
  for (int k = 0; k < 24; k++) printf("%d ", first[k]);
  printf("\n");
  for (int k = 0; k < 24; k++) printf("%d ", second[k]);
  printf("\ncounted %d\n", steps);
  return 0;
}
