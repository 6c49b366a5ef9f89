int A[10];
int main() {
  // a window of partial warps
#pragma pgpu speculate window(100) warp(32)
  for (int i = 0; i < 10; i++) A[i] = 1;
  return 0;
}
