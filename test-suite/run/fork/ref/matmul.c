// Sequential reference of examples/fork/matmul.fork.
int A[128][128];
int B[128][128];
int C[128][128];

int main() {
  int n = argi(0, 20);
  if (n > 128) n = 128;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      A[i][j] = (i * 7 + j * 3) % 11 - 5;
      B[i][j] = (i * 5 + j * 13 + 1) % 9 - 4;
    }
  }
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      int s = 0;
      for (int l = 0; l < n; l++) s = s + A[i][l] * B[l][j];
      C[i][j] = s;
    }
  }
  unsigned sum = 0;
  int trace = 0;
  for (int i = 0; i < n; i++) {
    trace = trace + C[i][i];
    for (int j = 0; j < n; j++) sum = sum * 31 + C[i][j];
  }
  printf("n %d trace %d checksum %u\n", n, trace, sum);
  if (n > 0) printf("C[0][0] %d C[n-1][n-1] %d\n", C[0][0], C[n - 1][n - 1]);
  return 0;
}
