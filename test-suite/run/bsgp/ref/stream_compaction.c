// Sequential reference for stream_compaction: one pass keeps the multiples
// of 3 in order.
int kept[100000];

int main() {
  int n = argi(0, 1000);
  rand_seed(11);
  int count = 0;
  for (int i = 0; i < n; i++) {
    int x = (int)(rand_u32() % 100000u);
    if (x % 3 == 0) {
      kept[count] = x;
      count++;
    }
  }
  long sum = 0;
  for (int i = 0; i < count; i++)
    sum += (long)kept[i] * (long)(i % 11 + 1);
  printf("kept %d and %d, checksum %ld, mismatches %d\n", count, count, sum, 0);
  return 0;
}
