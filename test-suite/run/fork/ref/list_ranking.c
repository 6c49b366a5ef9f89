// Sequential reference of examples/fork/list_ranking.fork: the same list,
// ranked by one walk from the head.
int perm[4096];
int next[4096];
int rank[4096];

int main() {
  int n = argi(0, 100);
  if (n > 4096) n = 4096;
  if (n < 1) n = 1;
  rand_seed(argi(1, 5));
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = rand_u32() % (i + 1);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int k = 0; k + 1 < n; k++) next[perm[k]] = perm[k + 1];
  next[perm[n - 1]] = perm[n - 1];
  int head = perm[0];
  int v = head;
  int count = 0;
  while (1) {
    count++;
    if (next[v] == v) break;
    v = next[v];
  }
  v = head;
  for (int k = 0; k < count; k++) {
    rank[v] = count - 1 - k;
    v = next[v];
  }
  unsigned sum = 0;
  int ok = 1;
  for (int k = 0; k < n; k++) {
    if (rank[perm[k]] != n - 1 - k) ok = 0;
    sum = sum * 31 + rank[k];
  }
  printf("n %d head %d tail %d checksum %u ok %d\n", n, perm[0], perm[n - 1], sum, ok);
  for (int i = 0; i < n && i < 10; i++) printf("rank[%d] = %d\n", i, rank[i]);
  return 0;
}
