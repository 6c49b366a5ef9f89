// Sequential reference for particle_binning: a stable counting sort of the
// particles by cell.
float px[100000];
float py[100000];
float sx[100000];
float sy[100000];
int cellOf[100000];
int cellStart[10000];
int cellEnd[10000];
int fill[10000];

int main() {
  int n = argi(0, 500);
  int grid = argi(1, 8);
  rand_seed(5);
  int cells = grid * grid;
  for (int i = 0; i < n; i++) {
    px[i] = (float)(rand_u32() % 10000u) / 10000.0f;
    py[i] = (float)(rand_u32() % 10000u) / 10000.0f;
  }
  for (int c = 0; c < cells; c++)
    fill[c] = 0;
  for (int i = 0; i < n; i++) {
    int cx = (int)(px[i] * (float)grid);
    int cy = (int)(py[i] * (float)grid);
    cellOf[i] = cy * grid + cx;
    fill[cellOf[i]]++;
  }
  int start = 0;
  for (int c = 0; c < cells; c++) {
    cellStart[c] = fill[c] > 0 ? start : 0;
    cellEnd[c] = fill[c] > 0 ? start + fill[c] : 0;
    fill[c] = start;
    start += cellEnd[c] - cellStart[c];
  }
  for (int i = 0; i < n; i++) {
    int slot = fill[cellOf[i]];
    sx[slot] = px[i];
    sy[slot] = py[i];
    fill[cellOf[i]]++;
  }
  long ranges = 0;
  int occupied = 0;
  for (int c = 0; c < cells; c++) {
    ranges += (long)cellStart[c] * (long)(c + 1) + (long)cellEnd[c];
    if (cellEnd[c] > cellStart[c])
      occupied++;
  }
  double order = 0.0;
  for (int i = 0; i < n; i++)
    order += (double)sx[i] * (double)(i % 5 + 1) + (double)sy[i];
  printf("cells %d occupied %d ranges %ld order %.4f\n", cells, occupied, ranges, order);
  return 0;
}
