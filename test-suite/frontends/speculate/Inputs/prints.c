int A[10];
int main() {
  int n = 10;
  // output inside
#pragma pgpu speculate
  for (int i = 0; i < n; i++) {
    printf("%d\n", A[i]);
  }
  return 0;
}
