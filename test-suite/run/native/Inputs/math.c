// The math builtins at run time: x = 0.75, n = 7 and f = 2.5f by default
// (command-line integers, so nothing folds at compile time). math.test
// checks the printed values against Python's math module.
int main() {
  double x = argi(0, 3) / 4.0;
  int n = argi(1, 7);
  float f = argi(2, 5) / 2.0f;
  printf("sqrt %.9f %.9f\n", sqrt(x), sqrt(n));
  printf("exp %.9f %.9f\n", exp(x), exp(-n));
  printf("log %.9f %.9f\n", log(x), log(n));
  printf("fabs %.9f %.9f\n", fabs(-x), fabs(n - 10));
  printf("pow %.9f %.9f %.9f\n", pow(x, n), pow(n, 0.5), pow(2, -n));
  printf("sin %.9f %.9f\n", sin(x), sin(n));
  printf("cos %.9f %.9f\n", cos(x), cos(n));
  printf("floor %.1f %.1f %.1f\n", floor(x), floor(-x), floor(n / 2.0));
  printf("float %.5f %.5f %.5f %.5f\n", sqrtf(f), expf(f), logf(f), fabsf(-f));
  printf("float %.5f %.5f %.5f %.1f\n", powf(f, 3), sinf(f), cosf(f), floorf(-f));
  int k = floor(sqrt(n) * 1000.0);
  printf("int %d\n", k);
  return 0;
}
