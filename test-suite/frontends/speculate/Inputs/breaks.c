int A[10];
int main() {
  int n = 10;
  // leaves early
#pragma pgpu speculate
  for (int i = 0; i < n; i++) {
    if (A[i] > 3) break;
    A[i] = 1;
  }
  return 0;
}
