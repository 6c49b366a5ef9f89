// Sequential reference for listing6_get_numbers: scan the text once and
// parse every maximal run of digits.
char text[100000];

int main() {
  int length = argi(0, 600);
  int regions = argi(1, 7);
  rand_seed(7);
  for (int i = 0; i < length; i++) {
    unsigned r = rand_u32() % 10u;
    if (r < 5u)
      text[i] = (char)(48 + (int)(rand_u32() % 10u));
    else if (r < 8u)
      text[i] = (char)32;
    else
      text[i] = (char)(97 + (int)r);
  }
  for (int k = 0; k < regions; k++)
    text[(k + 1) * length / regions - 1] = ' ';
  int numbers = 0;
  double sum = 0.0;
  double weighted = 0.0;
  int i = 0;
  while (i < length) {
    if (text[i] >= '0' && text[i] <= '9') {
      long value = 0;
      while (i < length && text[i] >= '0' && text[i] <= '9') {
        value = value * 10 + (long)(text[i] - '0');
        i++;
      }
      numbers++;
      float f = (float)value;
      sum += (double)f;
      weighted += (double)f * (double)numbers;
    } else {
      i++;
    }
  }
  printf("numbers %d sum %.1f weighted %.1f\n", numbers, sum, weighted);
  return 0;
}
