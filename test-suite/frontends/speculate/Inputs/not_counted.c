int A[10];
int main() {
  int i = 0;
  int n = 10;
  // a while-shaped for
#pragma pgpu speculate
  for (; i < n; i = i * 2 + 1) A[i] = 1;
  return 0;
}
