// Sequential reference for listing1_find_faces, listing3_sortby_expanded and
// listing9_find_faces_get: a stable counting sort of the 3n triangle corners
// by vertex.

int ib[30000];
int pf[30000];
int hd[10000];
int count[10000];

int main() {
  int n = argi(0, 200);
  int m = argi(1, 97);
  rand_seed(1);
  for (int i = 0; i < n * 3; i++)
    ib[i] = (int)(rand_u32() % (unsigned)m);
  for (int v = 0; v < m; v++) {
    hd[v] = -1;
    count[v] = 0;
  }
  for (int i = 0; i < n * 3; i++)
    count[ib[i]]++;
  int start = 0;
  for (int v = 0; v < m; v++) {
    int c = count[v];
    if (c > 0)
      hd[v] = start;
    count[v] = start;
    start += c;
  }
  for (int i = 0; i < n * 3; i++) {
    pf[count[ib[i]]] = i / 3;
    count[ib[i]]++;
  }
  long sum = 0;
  for (int i = 0; i < n * 3; i++)
    sum += (long)pf[i] * (long)(i % 13 + 1);
  long heads = 0;
  for (int v = 0; v < m; v++)
    heads += (long)hd[v] * (long)(v + 1);
  printf("faces %d vertices %d pf-checksum %ld hd-checksum %ld\n", n, m, sum, heads);
  return 0;
}
