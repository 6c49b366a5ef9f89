// Sequential reference for examples/fork/figure1.fork: the statements of
// Figure 1 one after the other, each for all processors (reads of a
// statement before its writes).
int a[8];
int loc[8];
int out[8];

int main() {
  for (int p = 0; p < 8; p++) a[p] = p * 3;
  for (int p = 0; p < 8; p++) loc[p] = a[p];
  for (int p = 0; p < 8; p++) {
    if (p % 3 == 0) a[p] = p;
    else a[p] = loc[p] + 1;
  }
  for (int p = 0; p < 8; p++) loc[p] = a[p] + a[(p + 1) % 8];
  for (int p = 0; p < 8; p++) out[p] = loc[p];
  for (int i = 0; i < 8; i++) printf("%d ", out[i]);
  printf("\n");
  return 0;
}
