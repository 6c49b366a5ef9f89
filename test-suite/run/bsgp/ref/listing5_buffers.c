// Sequential reference for listing5_buffers: v4 = (v1 + 2 v0) + v1.
int main() {
  int v0 = argi(0, 5);
  int v1 = argi(1, 7);
  int v2 = v0 + v0;
  int v3 = v1 + v2;
  int v4 = v3 + v1;
  printf("a = {%d, %d, %d}\n", v0, v1, v4);
  return 0;
}
