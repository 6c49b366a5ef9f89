// Sequential reference for number_extraction: one left-to-right scan with
// the same number syntax (digits, optionally '.' and digits), checking each
// position in turn instead of forking a thread per character.
char text[100000];

int main() {
  int length = argi(0, 800);
  int regions = argi(1, 9);
  rand_seed(13);
  for (int i = 0; i < length; i++) {
    unsigned r = rand_u32() % 12u;
    if (r < 6u)
      text[i] = (char)(48 + (int)(rand_u32() % 10u));
    else if (r < 7u)
      text[i] = '.';
    else if (r < 10u)
      text[i] = ' ';
    else
      text[i] = 'x';
  }
  int regionEnd[1000];
  for (int k = 0; k < regions; k++) {
    regionEnd[k] = (k + 1) * length / regions - 1;
    text[regionEnd[k]] = ' ';
  }
  int found = 0;
  double sum = 0.0;
  long owners = 0;
  int region = 0;
  for (int i = 0; i < length; i++) {
    while (i > regionEnd[region])
      region++;
    // A number starts at a digit that follows neither a digit nor the '.'
    // of a fraction (a '.' right after a digit).
    bool digit = text[i] >= '0' && text[i] <= '9';
    bool afterDigit = i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9';
    bool afterFraction = i > 1 && text[i - 1] == '.' && text[i - 2] >= '0' && text[i - 2] <= '9';
    if (!digit || afterDigit || afterFraction)
      continue;
    int j = i;
    double value = 0.0;
    while (j < length && text[j] >= '0' && text[j] <= '9') {
      value = value * 10.0 + (double)(text[j] - '0');
      j++;
    }
    if (j + 1 < length && text[j] == '.' && text[j + 1] >= '0' && text[j + 1] <= '9') {
      j++;
      double scale = 0.1;
      while (j < length && text[j] >= '0' && text[j] <= '9') {
        value += scale * (double)(text[j] - '0');
        scale *= 0.1;
        j++;
      }
    }
    sum += value * (double)(found % 3 + 1);
    owners += (long)region * (long)(found + 1);
    found++;
  }
  printf("numbers %d checksum %.6f regions %ld\n", found, sum, owners);
  return 0;
}
